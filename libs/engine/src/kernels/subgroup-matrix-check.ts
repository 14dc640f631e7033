import * as tf from '@tensorflow/tfjs-core';
import { multiOutputBindings, MultiOutputProgram, runMultiOutputProgram, wgslModule } from './webgpu-program';
import { ProductTile, rowMajor, tiledProduct, usedSubgroupMatrices, useSubgroupMatrices } from './tiled-product.wgsl';

/** The check's product: [M, K] x [K, N], every side past a tile's edge, so that the ragged tiles are checked too. */
const [M, K, N] = [80, 72, 96];

/**
 * y = x W on `tile`, W [K, N] row-major or (`transposed`) given as W^T [N, K] and read
 * transposed, as a projection's input gradient reads its weight: the product's two ways of
 * staging its right operand.
 */
function checkProgram(tile: ProductTile, transposed: boolean): MultiOutputProgram {
  const rightAt = transposed ? (k: string, c: string) => `w[${c} * ${K}u + ${k}]` : (k: string, c: string) => `w[${k} * ${N}u + ${c}]`;
  return {
    key: `trainyardSubgroupMatrixCheck_${tile}_${transposed}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['x', 'w'], ['y'])}
fn finish(row : u32, col : u32, acc : f32) -> f32 { return acc; }
${tiledProduct(K, N, tile, rowMajor('x', K), rightAt, !transposed, (row, col, value) => `y[${row} * ${N}u + ${col}] = ${value};`)}`,
    outputShapes: [[M, N]],
    dispatch: [Math.ceil(N / 64), Math.ceil(M / 64), 1],
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/**
 * Whether the products the engine makes in subgroup matrices (useSubgroupMatrices) give what its
 * f32 tiles give on this device: the programs compiled first, in error scopes of their own (an
 * error the device reports outside them would fail every later readback, gpu-faults.ts), then
 * a product of values in [-1, 1] both ways for each way of staging the right operand, the
 * largest difference within 1e-2 of the largest output (f16 operands round to 11 bits; a wrong
 * layout or a driver's fault is off by the output's size). Where they do not, products go back
 * to the f32 tiles. Run once the webgpu backend has started; agrees where no subgroup matrices
 * are in use.
 */
export async function checkSubgroupMatrices(): Promise<{ agree: boolean; error: number; reason?: string }> {
  if (!usedSubgroupMatrices()) return { agree: true, error: 0 };
  const backend = tf.backend();
  const device = (backend as unknown as { device: GPUDevice }).device;
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  let reason: string | undefined;
  try {
    for (const transposed of [false, true]) {
      const module = device.createShaderModule({ code: wgslModule(checkProgram('matrix', transposed).wgsl()) });
      const error = (await module.getCompilationInfo()).messages.find((m) => m.type === 'error');
      if (error) throw new Error(`WGSL line ${error.lineNum}: ${error.message}`);
      await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    }
  } catch (err) {
    reason = (err as Error).message;
  }
  const scoped = [await device.popErrorScope(), await device.popErrorScope()].find((e) => e !== null);
  reason ??= scoped?.message;
  if (reason !== undefined) {
    useSubgroupMatrices(null);
    return { agree: false, error: NaN, reason };
  }
  const x = tf.randomUniform([M, K], -1, 1, 'float32', 1);
  const w = { false: tf.randomUniform([K, N], -1, 1, 'float32', 2), true: tf.randomUniform([N, K], -1, 1, 'float32', 3) };
  const outputs = [false, true].flatMap((transposed) =>
    (['matrix', 64] as const).map((tile) => tf.engine().makeTensorFromTensorInfo(runMultiOutputProgram(backend, checkProgram(tile, transposed), [x, w[`${transposed}`]])[0])),
  );
  try {
    const [matrix, tiled, matrixT, tiledT] = (await Promise.all(outputs.map((t) => t.data()))) as Float32Array[];
    const error = Math.max(relativeError(matrix, tiled), relativeError(matrixT, tiledT));
    const agree = error <= 1e-2;
    if (!agree) useSubgroupMatrices(null);
    return { agree, error };
  } finally {
    tf.dispose([x, w.false, w.true, ...outputs]);
  }
}

/** The largest difference of `got` from `want`, over want's largest magnitude (NaN where either is not finite). */
function relativeError(got: Float32Array, want: Float32Array): number {
  const scale = Math.max(...Array.from(want, Math.abs));
  return Math.max(...Array.from(want, (v, i) => Math.abs(v - got[i]))) / scale;
}
