/**
 * Entity, project and model names become parts of `wandb-artifact:///{entity}/{project}/{name}`,
 * so they may not contain `/` or `:`.
 */
export const NAME_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
export const NAME_SEGMENT_MESSAGE = '$property must be 1 to 128 letters, digits, ".", "_" or "-", not starting with "." or "-"';
