import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { tiledLinearShader } from '../src/kernels/decode-step.wgsl';
import { checkSubgroupMatrices } from '../src/kernels/subgroup-matrix-check';
import { ExtraWork, PRODUCT_TILES, rowMajor, SubgroupMatrices, tiledProduct, usedSubgroupMatrices, useSubgroupMatrices } from '../src/kernels/tiled-product.wgsl';
import { multiOutputBindings, wgslModule } from '../src/kernels/webgpu-program';
import { dawnInstance } from '../src/webgpu';
import { webgpuUnavailable } from './helpers';

/**
 * The tiled products in subgroup matrices (kernels/tiled-product.wgsl.ts, matrixProduct) compile:
 * on Dawn's null backend, which offers chromium-experimental-subgroup-matrix and validates the
 * WGSL and the pipeline as a GPU's device does, but runs nothing. No local adapter runs subgroup
 * matrices (lavapipe's Dawn does not offer them), so their results are checked on the device
 * they run on, against the f32 tiles, each time a backend starts with them
 * (kernels/subgroup-matrix-check.ts). The f32 tiles compile there too, on a device given
 * WebGPU's default limits, as the least a device offers.
 */
const FEATURES = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'] as GPUFeatureName[];

/** Compilation errors of `code` as a module, and the pipeline's; empty where both compile. */
async function compileErrors(device: GPUDevice, code: string): Promise<string[]> {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const messages = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}: ${m.message}`);
  try {
    await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  } catch (err) {
    messages.push((err as Error).message);
  }
  const scoped = await device.popErrorScope();
  return scoped ? [...messages, scoped.message] : messages;
}

/** A program as the engine's kernels make one: bindings, `finish`, the product (lora.webgpu.ts's layout). */
function program(inputs: string[], outputs: string[], finish: string, product: string): string {
  return wgslModule(`${multiOutputBindings('M : u32', inputs, outputs)}
fn finish(row : u32, col : u32, acc : f32) -> f32 { ${finish} }
${product}`);
}

describe('tiled products in subgroup matrices', () => {
  let device: GPUDevice;

  beforeAll(async () => {
    const adapter = await dawnInstance(['backend=null', 'enable-dawn-features=allow_unsafe_apis']).requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend gave no adapter");
    device = await adapter.requestDevice({ requiredFeatures: FEATURES });
  });

  afterAll(() => {
    device?.destroy();
    useSubgroupMatrices(null);
  });

  const shapes: SubgroupMatrices[] = [
    { M: 16, N: 16, K: 16, subgroupSize: 32 },
    { M: 8, N: 8, K: 8, subgroupSize: 32 },
    { M: 16, N: 16, K: 16, subgroupSize: 64 },
  ];

  it.each(shapes)('y = x W + bias compiles for matrices of $M x $N x $K by subgroups of $subgroupSize', async (shape) => {
    useSubgroupMatrices(shape);
    const code = program(['x', 'w', 'bias'], ['y'], 'return acc + bias[col];', tiledProduct(72, 200, 'matrix', rowMajor('x', 72), (k, c) => `w[${k} * 200u + ${c}]`, true, (row, col, value) => `y[${row} * 200u + ${col}] = ${value};`));
    expect(code.startsWith('enable f16;\nenable chromium_experimental_subgroup_matrix;\ndiagnostic(')).toBe(true);
    expect(await compileErrors(device, code)).toEqual([]);
  });

  it.each(shapes)('dx = dy W^T with extra workgroups and a store of two values compiles for $M x $N x $K by $subgroupSize', async (shape) => {
    useSubgroupMatrices(shape);
    // As the down projection's dx with its factors' gradients: W read transposed, workgroups after the product's with barriers of their own.
    const extra: ExtraWork = {
      body: `    partial[tid] = f32(extra);
    workgroupBarrier();
    if (tid == 0u) { da[extra] = partial[0] + partial[255]; }`,
    };
    const product = tiledProduct(96, 40, 'matrix', rowMajor('dy', 96), (n, c) => `w[${c} * 96u + ${n}]`, false, (row, col, value) => `dx[${row} * 80u + ${col}] = ${value};\n dx[${row} * 80u + ${col} + 40u] = 2.0 * ${value};`, extra);
    const code = program(['dy', 'w'], ['dx', 'da'], 'return acc;', `var<workgroup> partial : array<f32, 256>;\n${product}`);
    expect(await compileErrors(device, code)).toEqual([]);
  });

  it.each(shapes)("a prompt chunk's products in the decoding step compile for $M x $N x $K by $subgroupSize: RMSNorm'd or not, f32 or bf16 weights, with their adapters", async (shape) => {
    useSubgroupMatrices(shape);
    // The products with a norm take their adapters' delta in their store (addDelta), those without make x A after their tiles (makeXA).
    for (const norm of [true, false]) {
      for (const weights of ['F32', 'BF16'] as const) {
        for (const adapters of ['none', norm ? 'addDelta' : 'makeXA'] as const) {
          const code = tiledLinearShader(72, 200, 'matrix', 32, norm, weights, adapters);
          expect(code.startsWith('enable f16;')).toBe(true);
          expect(await compileErrors(device, code)).toEqual([]);
        }
      }
    }
  });

  it.each(PRODUCT_TILES)("the f32 tiles' products compile within WebGPU's default limits: the %i-tile, W read both ways", async (tile) => {
    // The device was asked for no limits: 16,384 bytes of workgroup memory, which the 128-tile's staged slices fill.
    expect(device.limits.maxComputeWorkgroupStorageSize).toBe(16384);
    for (const transposed of [false, true]) {
      const rightAt = transposed ? (k: string, c: string) => `w[${c} * 72u + ${k}]` : (k: string, c: string) => `w[${k} * 200u + ${c}]`;
      const code = program(['x', 'w'], ['y'], 'return acc;', tiledProduct(72, 200, tile, rowMajor('x', 72), rightAt, !transposed, (row, col, value) => `y[${row} * 200u + ${col}] = ${value};`));
      expect(await compileErrors(device, code)).toEqual([]);
    }
  });

  it('a WGSL error in such a product is reported (the check above can fail)', async () => {
    useSubgroupMatrices(shapes[0]);
    const product = tiledProduct(32, 32, 'matrix', rowMajor('x', 32), (k, c) => `w[${k} * 32u + ${c}]`, true, (row, col, value) => `y[${row} * 32u + ${col}] = ${value};`);
    // The result's type wrong for the configuration: a left of f32 into an f16 right.
    const broken = program(['x', 'w'], ['y'], 'return acc;', product.replace('subgroup_matrix_left<f16,', 'subgroup_matrix_left<f32,'));
    expect((await compileErrors(device, broken)).length).toBeGreaterThan(0);
  });
});

describe('WGSL assembled from parts', () => {
  it("moves the parts' directives, each once, before everything else", () => {
    const code = wgslModule('struct U { M : u32 }\nenable f16;\nvar<private> a : f16;\nenable f16;\ndiagnostic(off, derivative_uniformity);\nfn main() {}');
    expect(code).toBe('enable f16;\ndiagnostic(off, derivative_uniformity);\nstruct U { M : u32 }\nvar<private> a : f16;\nfn main() {}');
    expect(wgslModule('fn main() {}')).toBe('fn main() {}');
  });
});

/** On lavapipe, as the other webgpu tests (CI=true: a missing adapter fails instead of skipping). */
const unavailable = webgpuUnavailable();
const onLavapipe = unavailable && process.env['CI'] !== 'true' ? describe.skip : describe;

onLavapipe('the start-up check of subgroup matrices', () => {
  beforeAll(async () => {
    await selectBackend('webgpu');
  });

  afterAll(() => useSubgroupMatrices(null));

  it('agrees, doing nothing, where no subgroup matrices are in use', async () => {
    useSubgroupMatrices(null);
    expect(await checkSubgroupMatrices()).toEqual({ agree: true, error: 0 });
  });

  it('turns them off where the device will not compile their products, and the device goes on working', async () => {
    // The engine's device here was not given the feature (lavapipe's Dawn does not offer it), as a driver may refuse a program.
    useSubgroupMatrices({ M: 16, N: 16, K: 16, subgroupSize: 32 });
    const check = await checkSubgroupMatrices();
    expect(check.agree).toBe(false);
    expect(check.reason).toMatch(/subgroup_matrix|f16|extension|feature/i);
    expect(usedSubgroupMatrices()).toBeNull();
    // No error escaped the check's scopes: a readback still gives values.
    const x = tf.tensor1d([1, 2, 3]);
    expect(Array.from(await tf.mul(x, 2).data())).toEqual([2, 4, 6]);
    x.dispose();
  });
});
