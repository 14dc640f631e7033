import * as tf from '@tensorflow/tfjs-core';
import { shareIdentityBuffers } from './kernels/identity';
import { checkSubgroupMatrices } from './kernels/subgroup-matrix-check';
import { SubgroupMatrices, usedSubgroupMatrices } from './kernels/tiled-product.wgsl';
import { dawnFlags, GpuAdapterInfo, installNavigatorGpu, registerWebGpuDevice, requestAdapterInfo } from './webgpu';
import { boundBufferPool, BufferManagerInternals, bufferPoolBytes } from './webgpu-buffer-pool';
import { keepUniforms, UniformsBackend } from './webgpu-uniforms';
import { UploadsBackend, uploadsByWriteBuffer } from './webgpu-uploads';

export type BackendName = 'tensorflow' | 'webgpu' | 'wasm' | 'cpu';
export type BackendPreference = BackendName | 'auto';

export interface BackendInfo {
  /** The tfjs backend actually in use. */
  name: BackendName;
  /**
   * True only on a GPU: tfjs-node-gpu with a GPU device TensorFlow reports, or webgpu on an
   * adapter that is not a software fallback.
   */
  gpu: boolean;
  /** webgpu only: the adapter in use. */
  adapter: GpuAdapterInfo | null;
  /** webgpu only: the subgroup matrices training's products take (setTensorCores), null where none. */
  tensorCores: SubgroupMatrices | null;
  /** Why a preferred backend (or its tensor cores) was not used, when one was skipped. */
  notes: string[];
}

/**
 * The dispatches tfjs's webgpu backend records into one command buffer before it submits it
 * (its flag WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE, 15 by default; the engine's own programs follow
 * the same flag, kernels/webgpu-program.ts). Each submit costs the host a command encoder, its
 * finish and the queue's submit, and on a GPU the driver's work for each; at 15, a LoRA SFT step
 * of SmolLM2-135M's 30 layers, 1,268 dispatches, made 85 submits, at 64 it makes 21
 * (tools/bench/gpu/host.bench.ts). A readback submits what is recorded whatever the count. The
 * buffers of tensors disposed meanwhile return to the pool only at the submit, so a larger
 * batch holds more of them at once. On Dawn's null backend the host's time is the same at 15
 * and at 64 and the step's peak of buffers in use 8 % higher at 64: docs/benchmarks.md ("The
 * host's part of a step"); the driver's share is for a GPU run to show (`--dispatches-per-submit`
 * in tools/bench/gpu/gpu.bench.ts).
 */
export const WEBGPU_DISPATCHES_PER_SUBMIT = 64;

/** Sets the dispatches a command buffer takes before it is submitted (WEBGPU_DISPATCHES_PER_SUBMIT when the backend starts; benches compare others). */
export function setDispatchesPerSubmit(dispatches: number): void {
  if (!Number.isInteger(dispatches) || dispatches < 1) throw new Error(`dispatches per submit: a whole number of at least 1, not ${dispatches}`);
  tf.env().set('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE', dispatches);
}

interface Activated {
  gpu: boolean;
  adapter: GpuAdapterInfo | null;
  notes?: string[];
}

/**
 * Picks the fastest backend that works here: tfjs-node-gpu when it loads and sees a GPU,
 * else webgpu (Dawn over Vulkan) on a hardware adapter, else wasm (one thread, SIMD), else
 * the pure-JS cpu backend. A software adapter (lavapipe) is slower than wasm, so `auto`
 * passes it over; naming `webgpu` takes it (tests, correctness checks). tfjs never falls back
 * on its own when a kernel is missing, so the choice is made once, up front, and reported.
 */
export async function selectBackend(preference: BackendPreference = 'auto'): Promise<BackendInfo> {
  const notes: string[] = [];
  const order: BackendName[] = preference === 'auto' ? ['tensorflow', 'webgpu', 'wasm', 'cpu'] : [preference];
  for (const name of order) {
    try {
      const { gpu, adapter, notes: more = [] } = await activate(name, { gpuOnly: preference === 'auto' });
      if (name === 'tensorflow' && !gpu && preference === 'auto') {
        notes.push('tensorflow: loaded but no GPU device is visible; using wasm instead');
        continue;
      }
      notes.push(...more);
      return { name, gpu, adapter, tensorCores: name === 'webgpu' ? usedSubgroupMatrices() : null, notes };
    } catch (err) {
      notes.push(`${name}: ${(err as Error).message}`);
    }
  }
  throw new Error(`No TensorFlow.js backend could be initialised (${notes.join('; ')})`);
}

/** Makes `name` the tfjs backend. gpuOnly: refuse a software WebGPU adapter before the backend starts on it. */
async function activate(name: BackendName, { gpuOnly }: { gpuOnly: boolean }): Promise<Activated> {
  switch (name) {
    case 'tensorflow': {
      // Optional dependency: absent wherever libtensorflow could not be downloaded.
      const moduleName = '@tensorflow/tfjs-node-gpu';
      require(moduleName);
      await setBackend('tensorflow');
      return { gpu: usesGpuDevice(tf.backend()), adapter: null };
    }
    case 'webgpu': {
      const adapter = await requestAdapterInfo(installNavigatorGpu(dawnFlags()));
      if (!adapter) throw new Error('no WebGPU adapter (is a Vulkan driver installed?)');
      if (gpuOnly && adapter.fallback) throw new Error(`only a fallback adapter (${adapter.description || adapter.vendor}), not a GPU`);
      // Only after navigator.gpu exists: the package registers its backend on import if it does.
      const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
      registerWebGpuDevice(WebGPUBackend);
      await setBackend('webgpu');
      setDispatchesPerSubmit(WEBGPU_DISPATCHES_PER_SUBMIT);
      boundBufferPool((tf.backend() as unknown as { bufferManager: BufferManagerInternals }).bufferManager, bufferPoolBytes());
      keepUniforms(tf.backend() as unknown as UniformsBackend);
      uploadsByWriteBuffer(tf.backend() as unknown as UploadsBackend);
      // Tensor cores only where their products agree with the f32 tiles' on this device.
      const check = await checkSubgroupMatrices();
      const notes = check.agree ? [] : [`tensor cores: off, their products ${check.reason ?? `differ from the f32 tiles' by ${check.error.toExponential(1)}`}`];
      return { gpu: !adapter.fallback, adapter, notes };
    }
    case 'wasm':
      await import('@tensorflow/tfjs-backend-wasm');
      shareIdentityBuffers();
      await setBackend('wasm');
      return { gpu: false, adapter: null };
    case 'cpu':
      await import('@tensorflow/tfjs-backend-cpu');
      await setBackend('cpu');
      return { gpu: false, adapter: null };
  }
}

async function setBackend(name: string): Promise<void> {
  if (!(await tf.setBackend(name))) throw new Error(`tf.setBackend('${name}') failed`);
  await tf.ready();
}

/**
 * tfjs-node's backend asks TensorFlow at start-up whether a GPU device was registered
 * (false when CUDA or cuDNN is missing and it silently fell back to the CPU).
 */
function usesGpuDevice(backend: unknown): boolean {
  return Boolean((backend as { isUsingGpuDevice?: boolean }).isUsingGpuDevice);
}
