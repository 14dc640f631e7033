/** A model directory that cannot be loaded; names the file and, when one is at fault, the tensor. */
export class ModelLoadError extends Error {
  constructor(
    message: string,
    readonly file: string,
    readonly tensor?: string,
  ) {
    super(`${file}${tensor ? ` (tensor ${tensor})` : ''}: ${message}`);
    this.name = 'ModelLoadError';
  }
}
