/**
 * Lists of numbers as cache keys (webgpu-bind-groups.ts, webgpu-uniforms.ts): a hash to look a
 * list up by and an equality to confirm it, where a string key would be built and hashed at every
 * lookup, thousands of times a training step.
 */

/** FNV-1a over the numbers, each taken as a 32-bit word (a fraction by its integer part, NaN and Infinity as 0): lists that differ mostly hash apart, and sameNumbers decides. */
export function hashNumbers(values: readonly number[]): number {
  let hash = 0x811c9dc5;
  for (const value of values) hash = Math.imul(hash ^ value, 0x01000193);
  return hash;
}

/** Whether `a` and `b` hold the same numbers in the same order, NaN the same as NaN. */
export function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}
