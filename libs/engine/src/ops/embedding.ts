import * as tf from '@tensorflow/tfjs-core';
import { embeddingRowsOnGpu } from '../kernels/embedding-rows.webgpu';
import { fusedKernelsApply } from '../kernels/webgpu-program';
import type { EmbeddingTable } from '../model/embedding';
import type { FrozenLinear } from '../model/linear';

/**
 * The embeddings of `ids`, [ids, hidden]: each id's row of the table times the model's
 * embedding `scale`. Copied from the host's table and uploaded, or on webgpu, where the lm_head
 * is the same table transposed on the GPU (`tiedHead`, for tied embeddings), read there by one
 * WGSL dispatch with only the ids uploaded (kernels/embedding-rows.webgpu.ts). No gradient: the
 * lookup is a constant input of every pass.
 */
export function embed(table: EmbeddingTable, ids: number[], scale: number, tiedHead: FrozenLinear | null): tf.Tensor2D {
  if (tiedHead && fusedKernelsApply()) {
    table.checkIds(ids);
    return embeddingRowsOnGpu(ids, tiedHead.gpuWeight(), scale);
  }
  return tf.tensor2d(table.rows(ids, scale), [ids.length, table.hidden]);
}
