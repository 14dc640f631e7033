import * as tf from '@tensorflow/tfjs-core';
import type { StorageDtype } from '../dtype';
import { weightReader } from './half-weights.wgsl';
import { flatMain, keptPrograms, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * A tied model's embedding rows read on webgpu from its lm_head, which holds the same table
 * transposed, W [hidden, vocab], as f32 or in 16 bits (half-weights.wgsl.ts): row `id` of the
 * embedding is column `id` of W. One dispatch, a thread an output value, each value times the
 * model's embedding scale in f32 as the host's copy multiplies it; only the ids are uploaded,
 * where the host's copy (model/embedding.ts) widens and uploads [ids, hidden] f32, 8 MB for a
 * 4 x 256-token step of the Qwen2.5-3B shape. The same bits as the host's rows: a 16-bit value
 * widens to f32 exactly either way. The lookup has no gradient: a pass's embeddings are a
 * constant input.
 */
export const EMBEDDING_ROWS_KERNEL = 'TrainyardEmbeddingRows';
const WORKGROUP = 64;

interface Attrs {
  dtype: StorageDtype;
  scale: number;
}

const programs = keptPrograms<MultiOutputProgram>();

/** rows [n, C] = scale * W[:, ids] for W [C, V]. */
function embeddingRowsProgram(n: number, C: number, V: number, a: Attrs): MultiOutputProgram {
  return programs(`${n}_${C}_${V}_${a.dtype}_${a.scale}`, () => {
    const w = weightReader('w', a.dtype, V);
    return {
      key: `trainyardEmbeddingRows_${C}_${V}_${a.dtype}`,
      wgsl: () => `${multiOutputBindings('n : u32, scale : f32', ['ids:i32', w.binding], ['rows'])}
${w.helpers}
${flatMain(WORKGROUP)}
  if (i >= u.n * ${C}u) { return; }
  let row = i / ${C}u;
  let h = i - row * ${C}u;
  rows[i] = ${w.at('h', 'u32(ids[row])')} * u.scale;
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
    const [C, stored] = w.shape;
    const [rows] = runMultiOutputProgram(backend, embeddingRowsProgram(ids.shape[0], C, a.dtype === 'F32' ? stored : 2 * stored, a), [ids, w]);
    return rows;
  },
});

/**
 * scale * W[:, ids] as [ids, C] for W [C, V] on webgpu: `weight` f32, or held in 16 bits as
 * `pairs` ([C, V / 2] int32) in `dtype`. The ids must be whole numbers in [0, V): the program
 * reads whatever column an id names.
 */
export function embeddingRowsOnGpu(ids: readonly number[], weight: tf.Tensor2D | { pairs: tf.Tensor2D; dtype: StorageDtype }, scale: number): tf.Tensor2D {
  const [w, dtype] = 'pairs' in weight ? [weight.pairs, weight.dtype] : [weight, 'F32' as const];
  if (ids.length === 0) return tf.zeros([0, w.shape[0]]);
  const attrs: Attrs = { dtype, scale };
  return tf.tidy(() => tf.engine().runKernel(EMBEDDING_ROWS_KERNEL, { ids: tf.tensor1d(ids as number[], 'int32'), w }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D);
}
