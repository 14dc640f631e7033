import * as tf from '@tensorflow/tfjs-core';

export type BackendName = 'tensorflow' | 'wasm' | 'cpu';
export type BackendPreference = BackendName | 'auto';

export interface BackendInfo {
  /** The tfjs backend actually in use. */
  name: BackendName;
  /** True only when tfjs-node-gpu loaded and TensorFlow reports a GPU device. */
  gpu: boolean;
  /** Why a preferred backend was not used, when one was skipped. */
  notes: string[];
}

/**
 * Picks the fastest backend that works here: tfjs-node-gpu when it loads and sees a GPU,
 * else wasm (one thread, SIMD), else the pure-JS cpu backend. tfjs never falls back on
 * its own when a kernel is missing, so the choice is made once, up front, and reported.
 */
export async function selectBackend(preference: BackendPreference = 'auto'): Promise<BackendInfo> {
  const notes: string[] = [];
  const order: BackendName[] = preference === 'auto' ? ['tensorflow', 'wasm', 'cpu'] : [preference];
  for (const name of order) {
    try {
      const gpu = await activate(name);
      if (name === 'tensorflow' && !gpu && preference === 'auto') {
        notes.push('tensorflow: loaded but no GPU device is visible; using wasm instead');
        continue;
      }
      return { name, gpu, notes };
    } catch (err) {
      notes.push(`${name}: ${(err as Error).message}`);
    }
  }
  throw new Error(`No TensorFlow.js backend could be initialised (${notes.join('; ')})`);
}

async function activate(name: BackendName): Promise<boolean> {
  switch (name) {
    case 'tensorflow': {
      // Optional dependency: absent wherever libtensorflow could not be downloaded.
      const moduleName = '@tensorflow/tfjs-node-gpu';
      require(moduleName);
      await setBackend('tensorflow');
      return usesGpuDevice(tf.backend());
    }
    case 'wasm':
      await import('@tensorflow/tfjs-backend-wasm');
      await setBackend('wasm');
      return false;
    case 'cpu':
      await import('@tensorflow/tfjs-backend-cpu');
      await setBackend('cpu');
      return false;
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
