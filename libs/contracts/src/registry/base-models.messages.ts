/** A base model this deployment can serve and train: a Hugging Face model directory. */
export interface BaseModelInfo {
  /** The id clients use, e.g. "HuggingFaceTB/SmolLM2-135M-Instruct". */
  id: string;
  /** model_type from config.json: llama, qwen2, qwen3. */
  architecture: string;
  /** Why the engine cannot load it (an architecture or setting it does not implement), or null when it can. */
  unsupported: string | null;
  /** Unix seconds: when its config.json was written. */
  created: number;
}

export interface ListBaseModelsReply {
  base_models: BaseModelInfo[];
}
