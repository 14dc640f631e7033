import * as tf from '@tensorflow/tfjs-core';
import { embeddingRowsOnGpu } from '../kernels/embedding-rows.webgpu';
import { fusedKernelsApply } from '../kernels/webgpu-program';
import type { EmbeddingTable } from '../model/embedding';
import type { FrozenLinear } from '../model/linear';

/**
 * The embeddings of `ids`, [ids, hidden]: each id's row of the table times the model's
 * embedding `scale`. On webgpu, read on the GPU by one WGSL dispatch with only the ids uploaded
 * (kernels/embedding-rows.webgpu.ts): from the lm_head where it is the same table transposed
 * (`tiedHead`, for tied embeddings), else from the table's own GPU copy (EmbeddingTable.onGpu).
 * Elsewhere copied from the host's table and uploaded. No gradient: the lookup is a constant
 * input of every pass.
 */
export function embed(table: EmbeddingTable, ids: number[], scale: number, tiedHead: FrozenLinear | null): tf.Tensor2D {
  const gpuTable = fusedKernelsApply() ? (tiedHead?.gpuWeight() ?? table.onGpu()) : null;
  if (gpuTable) {
    table.checkIds(ids);
    return embeddingRowsOnGpu(ids, gpuTable, tiedHead !== null, scale);
  }
  return tf.tensor2d(table.rows(ids, scale), [ids.length, table.hidden]);
}
