import * as tf from '@tensorflow/tfjs-core';
import { flatMain, fusedKernelsApply, keptPrograms, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, runProgram, workgroupGrid, WgslProgram } from './webgpu-program';

/**
 * Two KV caches' keys (or values) in one tensor, laid out as KVCache.merge lays them, in one
 * dispatch on webgpu where tfjs's ops take five (a slice and a pad of each, a concat): out
 * [Ra + Rb, heads, width + spare, headDim] holds a's rows then b's, each row's own columns (a's
 * first `aColumns`, b's first `bColumns`) right-aligned in the first `width` columns, zeros to
 * their left (padding, masked out) and in the `spare` columns after them (written by the steps
 * to come). A row joining a batch merges its cache this way, every layer's keys and values.
 */
export const CACHE_ROWS_KERNEL = 'TrainyardCacheRows';

const WORKGROUP = 64;

interface Attrs {
  aColumns: number;
  bColumns: number;
  width: number;
  spare: number;
}

function program(shape: number[]): WgslProgram {
  return {
    variableNames: ['a', 'b'],
    outputShape: shape,
    shaderKey: 'trainyardCacheRows',
    dispatchLayout: { x: [0, 1, 2, 3] },
    dispatch: [Math.ceil(tf.util.sizeFromShape(shape) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'aColumns : i32, bColumns : i32, width : i32,',
    size: true,
    getUserCode: () => `
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let H = uniforms.outShape[1];
        let W = uniforms.outShape[2];
        let D = uniforms.outShape[3];
        let d = index % D;
        let c = (index / D) % W;
        let h = (index / (D * W)) % H;
        let r = index / (D * W * H);
        let Ra = uniforms.aShape[0];
        var value = 0.0;
        if (r < Ra) {
          let first = uniforms.width - uniforms.aColumns;
          if (c >= first && c < uniforms.width) { value = a[((r * H + h) * uniforms.aShape[2] + c - first) * D + d]; }
        } else {
          let first = uniforms.width - uniforms.bColumns;
          if (c >= first && c < uniforms.width) { value = b[(((r - Ra) * H + h) * uniforms.bShape[2] + c - first) * D + d]; }
        }
        setOutputAtIndex(index, value);
      }`,
  };
}

tf.registerKernel({
  kernelName: CACHE_ROWS_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { a, b } = inputs as Record<'a' | 'b', tf.TensorInfo>;
    const { aColumns, bColumns, width, spare } = attrs as unknown as Attrs;
    const [Ra, H, , D] = a.shape;
    const shape = [Ra + b.shape[0], H, width + spare, D];
    return runProgram(backend, program(shape), [a, b], [
      { type: 'int32', data: [aColumns] },
      { type: 'int32', data: [bColumns] },
      { type: 'int32', data: [width] },
    ]);
  },
});

/** KVCache.merge's tensor of `a`'s and `b`'s rows (above) in one WGSL dispatch, or null where the fused kernels do not apply. */
export function cacheRows(a: tf.Tensor4D, aColumns: number, b: tf.Tensor4D, bColumns: number, width: number, spare: number): tf.Tensor4D | null {
  if (!fusedKernelsApply() || a.dtype !== 'float32' || b.dtype !== 'float32') return null;
  const attrs: Attrs = { aColumns, bColumns, width, spare };
  return tf.engine().runKernel(CACHE_ROWS_KERNEL, { a, b }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor4D;
}

const writeRowPrograms = keptPrograms<MultiOutputProgram>();

/**
 * Writes the one row of `source` [1, heads, S, headDim] over a row of `target` [rows, heads,
 * capacity, headDim] in place, as KVCache.replaceRow lays it: source's first `columns` columns
 * right-aligned in target's first `width`, the row and both counts read from `at` [row,
 * columns, width] so that the program's uniforms, and with them its bind group, are the same
 * at every join of rows of these sizes. A thread a value of source's S columns; those past
 * `columns` do nothing. The row's other columns keep what they held (masked out).
 */
function writeRowProgram(target: tf.TensorInfo, source: tf.TensorInfo): MultiOutputProgram {
  const [, H, capacity, D] = target.shape;
  const S = source.shape[2];
  return writeRowPrograms(`${H}_${capacity}_${D}_${S}`, () => ({
    key: 'trainyardCacheWriteRow',
    wgsl: () => `${multiOutputBindings('H : u32, capacity : u32, D : u32, S : u32', ['cache:rw', 'joining', 'at:u32'], [])}
${flatMain(WORKGROUP)}
  if (i >= u.H * u.S * u.D) { return; }
  let row = at[0];
  let columns = at[1];
  let width = at[2];
  let d = i % u.D;
  let c = (i / u.D) % u.S;
  let h = i / (u.D * u.S);
  if (c >= columns) { return; }
  cache[((row * u.H + h) * u.capacity + width - columns + c) * u.D + d] = joining[(h * u.S + c) * u.D + d];
}`,
    outputShapes: [],
    dispatch: workgroupGrid(Math.ceil((H * S * D) / WORKGROUP)),
    uniforms: [H, capacity, D, S].map((value) => ({ type: 'uint32' as const, value })),
  }));
}

/**
 * KVCache.replaceRow's writes of every layer's keys and values in place (above), each
 * `targets[i]` from `sources[i]`, one dispatch a tensor; false where the fused kernels do not
 * apply. Only for tensors their cache owns alone.
 */
export function writeCacheRows(targets: tf.Tensor4D[], row: number, sources: tf.Tensor4D[], columns: number, width: number): boolean {
  if (!fusedKernelsApply() || [...targets, ...sources].some((t) => t.dtype !== 'float32')) return false;
  const at = tf.tensor1d([row, columns, width], 'int32');
  try {
    targets.forEach((target, i) => runMultiOutputProgram(tf.backend(), writeRowProgram(target, sources[i]), [target, sources[i], at]));
  } finally {
    at.dispose();
  }
  return true;
}
