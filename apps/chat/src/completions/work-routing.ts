import type { InferenceWorkRouting, ResolveModelReply } from '@trainyard/contracts';

/** The weights an inference work item names: the resolved base model and, for a checkpoint, its adapter. */
export function servedWeights(resolved: ResolveModelReply): Pick<InferenceWorkRouting, 'base_model' | 'base_model_dir' | 'base_model_bundle' | 'adapter'> {
  return {
    base_model: resolved.base_model,
    base_model_dir: resolved.base_model_dir,
    base_model_bundle: resolved.base_model_bundle,
    adapter:
      resolved.adapter_bundle !== null && resolved.model_id !== null && resolved.step !== null
        ? { bundle: resolved.adapter_bundle, sha256: resolved.adapter_sha256, step: resolved.step, model_id: resolved.model_id }
        : null,
  };
}
