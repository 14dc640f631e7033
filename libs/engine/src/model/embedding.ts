import * as tf from '@tensorflow/tfjs-core';
import { f32ToBf16, f32ToF16, StorageDtype, widenInto } from '../dtype';
import type { GpuTable } from '../kernels/embedding-rows.webgpu';

/**
 * The token embedding table [vocab, hidden], kept in JS memory in the checkpoint's storage
 * dtype: a bf16 or f16 table in its 16 bits, half the bytes of an f32 copy (Qwen2.5-3B's
 * 151,936 x 2,048 table is 622 MB instead of 1,245 MB). A lookup copies rows, widening each
 * value to f32 as it copies it: no gather kernel, and no gather gradient. An untied model on
 * webgpu also keeps a copy on the GPU (onGpu), read there by one program.
 */
export class EmbeddingTable {
  private gpu: GpuTable | null = null;

  private constructor(
    readonly dtype: StorageDtype,
    private readonly values: Float32Array | Uint16Array,
    readonly hidden: number,
  ) {}

  /**
   * The table of `values`, a checkpoint's tensor read as f32, stored in `stored` (its dtype in
   * the checkpoint). Kept in 16 bits for F16 and BF16, which is exact: each value came from 16
   * bits and narrows back to them.
   */
  static of(values: Float32Array, hidden: number, stored: string): EmbeddingTable {
    if (stored === 'BF16') return new EmbeddingTable('BF16', f32ToBf16(values), hidden);
    if (stored === 'F16') return new EmbeddingTable('F16', f32ToF16(values), hidden);
    return new EmbeddingTable('F32', values, hidden);
  }

  /** Bytes the table holds. */
  get bytes(): number {
    return this.values.byteLength;
  }

  /** Rows of the table. */
  get vocab(): number {
    return this.values.length / this.hidden;
  }

  /** Throws unless every id names a row of the table. */
  checkIds(ids: readonly number[]): void {
    for (const id of ids) this.checkId(id);
  }

  private checkId(id: number): void {
    if (!(Number.isInteger(id) && id >= 0 && id < this.vocab)) throw new Error(`token id ${id} out of range [0, ${this.vocab})`);
  }

  /** The rows for `ids` as f32, [ids, hidden] row-major, each value times `scale` (in f32, as stored). */
  rows(ids: readonly number[], scale = 1): Float32Array {
    const C = this.hidden;
    const out = new Float32Array(ids.length * C);
    ids.forEach((id, i) => {
      this.checkId(id);
      const row = this.values.subarray(id * C, (id + 1) * C);
      if (row instanceof Float32Array) out.set(row, i * C);
      else widenInto(this.dtype as 'F16' | 'BF16', row, out, i * C);
    });
    if (scale !== 1) for (let j = 0; j < out.length; j++) out[j] *= scale;
    return out;
  }

  /**
   * The table on the backend now, as webgpu's programs read it (kernels/embedding-rows.webgpu.ts),
   * [vocab, hidden] row-major: f32, or a 16-bit table's words [vocab, hidden / 2] as int32, each
   * holding columns 2c and 2c + 1, the even one in its low half (dtype.ts's halfPairs): the
   * host's bits as they are, uploaded once on first use and kept until dispose. What an untied
   * model pays for reading its embeddings on the GPU: the table's bytes there as well (a tied
   * model reads its lm_head instead, the same table transposed). Null for a 16-bit table of odd
   * width, which has no pairs to pack (no family's hidden size is odd).
   */
  onGpu(): GpuTable | null {
    if (!this.gpu) {
      const V = this.vocab;
      const C = this.hidden;
      // Kept: a pass's tidy, where the first lookup makes it, would dispose it at its end.
      if (this.values instanceof Float32Array) this.gpu = tf.keep(tf.tensor2d(this.values, [V, C]));
      else {
        if (C % 2 !== 0) return null;
        const words = new Int32Array(this.values.buffer, this.values.byteOffset, this.values.length / 2);
        this.gpu = { pairs: tf.keep(tf.tensor2d(words, [V, C / 2], 'int32')), dtype: this.dtype };
      }
    }
    return this.gpu;
  }

  /** Releases the GPU copy, if one was made. */
  dispose(): void {
    if (this.gpu) ('pairs' in this.gpu ? this.gpu.pairs : this.gpu).dispose();
    this.gpu = null;
  }
}
