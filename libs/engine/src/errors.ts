/** A model directory that cannot be loaded; names the file and, when one is at fault, the tensor. */
export class ModelLoadError extends Error {
  constructor(
    /** What is wrong, without the file: what a client may be told. */
    readonly reason: string,
    readonly file: string,
    readonly tensor?: string,
  ) {
    super(`${file}${tensor ? ` (tensor ${tensor})` : ''}: ${reason}`);
    this.name = 'ModelLoadError';
  }
}
