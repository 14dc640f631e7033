import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { BackendName, selectBackend } from '../src/backend';
import { MakeModelOptions, makeModel } from '../src/maker/make-model';

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `engine-${prefix}-`));
}

export function makeTiny(prefix: string, options: Partial<MakeModelOptions> = {}): string {
  const out = tempDir(prefix);
  makeModel({ preset: 'tiny', out, seed: 7, ...options });
  return out;
}

export async function useBackend(name: BackendName): Promise<void> {
  const info = await selectBackend(name);
  if (info.name !== name) throw new Error(`wanted ${name}, got ${info.name}`);
  tf.engine().startScope();
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Rows of a [rows, cols] tensor as Float32Arrays. */
export function rowsOf(t: tf.Tensor2D): Float32Array[] {
  const [rows, cols] = t.shape;
  const data = t.dataSync() as Float32Array;
  return Array.from({ length: rows }, (_, r) => data.slice(r * cols, (r + 1) * cols));
}
