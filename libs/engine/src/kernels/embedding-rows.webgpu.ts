import * as tf from '@tensorflow/tfjs-core';
import type { StorageDtype } from '../dtype';
import { EmbeddingSource, embeddingReader, embeddingSourceKey } from './half-weights.wgsl';
import { flatMain, keptPrograms, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * A pass's embedding rows read on webgpu, where the table is on the GPU: a tied model's lm_head,
 * which holds it transposed, W [hidden, vocab] (row `id` of the table is column `id` of W), or
 * an untied model's own copy [vocab, hidden] (EmbeddingTable.onGpu), as f32 or in 16 bits
 * (half-weights.wgsl.ts). One dispatch, a thread an output value, each value times the model's
 * embedding scale in f32 as the host's copy multiplies it; only the ids are uploaded, where the
 * host's copy (model/embedding.ts) widens and uploads [ids, hidden] f32, 8 MB for a 4 x
 * 256-token step of the Qwen2.5-3B shape. The same bits as the host's rows: a 16-bit value
 * widens to f32 exactly either way. The lookup has no gradient: a pass's embeddings are a
 * constant input.
 */
export const EMBEDDING_ROWS_KERNEL = 'TrainyardEmbeddingRows';
const WORKGROUP = 64;

interface Attrs {
  source: EmbeddingSource;
  scale: number;
}

const programs = keptPrograms<MultiOutputProgram>();

/** rows [n, C] = scale * table[ids] for the table `a.source`. */
function embeddingRowsProgram(n: number, a: Attrs): MultiOutputProgram {
  const C = a.source.hidden;
  const key = embeddingSourceKey(a.source);
  return programs(`${n}_${key}_${a.scale}`, () => {
    const w = embeddingReader('w', a.source);
    return {
      key: `trainyardEmbeddingRows_${key}`,
      wgsl: () => `${multiOutputBindings('n : u32, scale : f32', ['ids:i32', w.binding], ['rows'])}
${w.helpers}
${flatMain(WORKGROUP)}
  if (i >= u.n * ${C}u) { return; }
  let row = i / ${C}u;
  let h = i - row * ${C}u;
  rows[i] = ${w.at('u32(ids[row])', 'h')} * u.scale;
}`,
      outputShapes: [[n, C]],
      dispatch: workgroupGrid(Math.ceil((n * C) / WORKGROUP)),
      uniforms: [
        { type: 'uint32', value: n },
        { type: 'float32', value: a.scale },
      ],
    };
  });
}

tf.registerKernel({
  kernelName: EMBEDDING_ROWS_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const a = attrs as unknown as Attrs;
    const { ids, w } = inputs as Record<string, tf.TensorInfo>;
    const [rows] = runMultiOutputProgram(backend, embeddingRowsProgram(ids.shape[0], a), [ids, w]);
    return rows;
  },
});

/** A table on the GPU as webgpu's programs take it: f32, or held in 16 bits as `pairs` (int32 words of two values each) in `dtype`. */
export type GpuTable = tf.Tensor2D | { pairs: tf.Tensor2D; dtype: StorageDtype };

/**
 * scale * table[ids] as [ids, hidden], `table` on webgpu: transposed, W [hidden, vocab] (a tied
 * lm_head's weight), or not, [vocab, hidden]. The ids must be whole numbers in [0, vocab): the
 * program reads whatever row an id names.
 */
export function embeddingRowsOnGpu(ids: readonly number[], table: GpuTable, transposed: boolean, scale: number): tf.Tensor2D {
  const [w, dtype] = 'pairs' in table ? [table.pairs, table.dtype] : [table, 'F32' as const];
  const [rows, stored] = w.shape;
  const columns = dtype === 'F32' ? stored : 2 * stored;
  const source: EmbeddingSource = { dtype, transposed, vocab: transposed ? columns : rows, hidden: transposed ? rows : columns };
  if (ids.length === 0) return tf.zeros([0, source.hidden]);
  const attrs: Attrs = { source, scale };
  return tf.tidy(() => tf.engine().runKernel(EMBEDDING_ROWS_KERNEL, { ids: tf.tensor1d(ids as number[], 'int32'), w }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D);
}
