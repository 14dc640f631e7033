import * as tf from '@tensorflow/tfjs-core';
import { multiOutputBindings, MultiOutputProgram, runMultiOutputProgram, wgslModule } from './webgpu-program';
import { ProductTile, tiledProduct, usedSubgroupMatrices, useSubgroupMatrices } from './tiled-product.wgsl';

/** The check's product: [M, K] x [K, N], every side past a tile's edge, so that the ragged tiles are checked too. */
const [M, K, N] = [80, 72, 96];

/** y = x W, W [K, N] row-major, on `tile`. */
function checkProgram(tile: ProductTile): MultiOutputProgram {
  return {
    key: `trainyardSubgroupMatrixCheck_${tile}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['x', 'w'], ['y'])}
fn finish(row : u32, col : u32, acc : f32) -> f32 { return acc; }
${tiledProduct(K, N, tile, 'x', (k, c) => `w[${k} * ${N}u + ${c}]`, true, (row, col, value) => `y[${row} * ${N}u + ${col}] = ${value};`)}`,
    outputShapes: [[M, N]],
    dispatch: [Math.ceil(N / 64), Math.ceil(M / 64), 1],
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/**
 * Whether the products the engine makes in subgroup matrices (useSubgroupMatrices) give what its
 * f32 tiles give on this device: the program compiled first, in error scopes of its own (an
 * error the device reports outside them would fail every later readback, gpu-faults.ts), then
 * one product of values in [-1, 1] both ways, the largest difference within 1e-2 of the largest
 * output (f16 operands round to 11 bits; a wrong layout or a driver's fault is off by the
 * output's size). Where they do not, products go back to the f32 tiles. Run once the webgpu
 * backend has started; agrees where no subgroup matrices are in use.
 */
export async function checkSubgroupMatrices(): Promise<{ agree: boolean; error: number; reason?: string }> {
  if (!usedSubgroupMatrices()) return { agree: true, error: 0 };
  const backend = tf.backend();
  const device = (backend as unknown as { device: GPUDevice }).device;
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  let reason: string | undefined;
  try {
    const module = device.createShaderModule({ code: wgslModule(checkProgram('matrix').wgsl()) });
    await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  } catch (err) {
    reason = (err as Error).message;
  }
  const scoped = [await device.popErrorScope(), await device.popErrorScope()].find((e) => e !== null);
  reason ??= scoped?.message;
  if (reason !== undefined) {
    useSubgroupMatrices(null);
    return { agree: false, error: NaN, reason };
  }
  const [x, w] = [tf.randomUniform([M, K], -1, 1, 'float32', 1), tf.randomUniform([K, N], -1, 1, 'float32', 2)];
  const [matrix] = runMultiOutputProgram(backend, checkProgram('matrix'), [x, w]);
  const [tiled] = runMultiOutputProgram(backend, checkProgram(64), [x, w]);
  const outputs = [matrix, tiled].map((t) => tf.engine().makeTensorFromTensorInfo(t));
  try {
    const [got, want] = (await Promise.all(outputs.map((t) => t.data()))) as Float32Array[];
    const scale = Math.max(...Array.from(want, Math.abs));
    const error = Math.max(...Array.from(want, (v, i) => Math.abs(v - got[i]))) / scale;
    const agree = error <= 1e-2;
    if (!agree) useSubgroupMatrices(null);
    return { agree, error };
  } finally {
    tf.dispose([x, w, ...outputs]);
  }
}
