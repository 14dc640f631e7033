import type { CallerScope } from './models.messages';

export interface ResolveModelRequest extends CallerScope {
  /** What a chat completion names: a base model id, wandb-artifact:///e/p/n[:step{N}|:latest|:v{K}] or e/p/n[:step{N}]. */
  model: string;
}

/** What to load to serve a model name; the adapter fields are null for a base model. */
export interface ResolveModelReply {
  base_model: string;
  /** Absolute path of the base model's directory. */
  base_model_dir: string;
  /**
   * SHA-256 of the base model's files as a bundle in the artifact store, when the registry
   * publishes base models there (PUBLISH_BASE_MODELS) and has published this one; else null.
   */
  base_model_bundle: string | null;
  model_id: string | null;
  step: number | null;
  /**
   * SHA-256 of the PEFT adapter's bundle manifest in the artifact store: workers fetch it by
   * this digest into their own cache (they need no access to the registry's disk).
   */
  adapter_bundle: string | null;
  /** SHA-256 of adapter_model.safetensors: a cache key that changes if the files do. */
  adapter_sha256: string | null;
}
