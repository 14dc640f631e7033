/**
 * Something that can change what names of this model resolve to was committed: a checkpoint
 * recorded, checkpoints deleted, the model deleted. The registry announces it before it
 * acknowledges the change, so that caches of resolutions (chat's) can drop the model first.
 */
export interface ModelsChanged {
  entity_id: string;
  model_id: string;
}
