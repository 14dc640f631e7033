/** The scheme of the names trained models are served by, as ART names a W&B artifact. */
export const SERVING_NAME_SCHEME = 'wandb-artifact:///';

/** What a trained model's serving name is made of. */
export interface ServingNameParts {
  entity: string;
  project: string;
  name: string;
}

/**
 * The name chat completions accept for a trained model,
 * `wandb-artifact:///{entity}/{project}/{name}`: it follows the newest checkpoint; with
 * `step`, `...:step{N}` pins that checkpoint. The registry's name parser reads it back.
 */
export function servingName(model: ServingNameParts, step?: number): string {
  return `${SERVING_NAME_SCHEME}${model.entity}/${model.project}/${model.name}${step === undefined ? '' : `:step${step}`}`;
}
