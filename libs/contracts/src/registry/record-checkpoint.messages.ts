import type { CallerScope } from './models.messages';

/**
 * A training job's new checkpoint. The registry gives it step = newest + 1 exactly once per
 * job: the checkpoint's id is the job's id, so a repeated request returns the first record.
 * The worker has stored the adapter in the artifact store first; the registry checks it is
 * there and is a PEFT adapter before it records it.
 */
export interface RecordCheckpointRequest extends CallerScope {
  model_id: string;
  job_id: string;
  /** SHA-256 of the adapter's bundle manifest in the artifact store (adapter_config.json and adapter_model.safetensors). */
  adapter_bundle: string;
  metrics: Record<string, number>;
}

export interface GetModelRequest extends CallerScope {
  model_id: string;
}
