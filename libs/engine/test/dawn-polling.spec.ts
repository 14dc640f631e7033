import { promisify } from 'node:util';
import * as vm from 'node:vm';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { dawnPollCounts, MAX_PAUSE_MS, pollPause, setDawnPolling, SPIN_MS } from '../src/dawn-polling';
import { webgpuUnavailable } from './helpers';

/**
 * Dawn's polling while it waits for the GPU is paced (dawn-polling.ts): the pause grows with
 * the wait and is capped; Dawn's own ticks are the ones paced, on lavapipe where there is no
 * GPU; every other setImmediate call behaves as Node's.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`Dawn polling tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

describe('pollPause', () => {
  it('polls a short wait without pausing, then pauses for a fiftieth of the wait, at most MAX_PAUSE_MS', () => {
    expect(pollPause(0)).toBe(0);
    expect(pollPause(SPIN_MS / 2)).toBe(0);
    expect(pollPause(10)).toBeCloseTo(0.2, 10);
    expect(pollPause(40)).toBeCloseTo(0.8, 10);
    expect(pollPause(10_000)).toBe(MAX_PAUSE_MS);
  });
});

suite('Dawn polling on webgpu', () => {
  beforeAll(() => selectBackend('webgpu'), 60_000);
  afterAll(() => {
    setDawnPolling('paced');
    return selectBackend('wasm');
  });

  /** A product of n x n matrices, read back: waited for past SPIN_MS on lavapipe at the first size, on a GPU at a larger one. */
  const waitForGpu = async (n = 384) => {
    const a = tf.randomUniform([n, n], -1, 1, 'float32', 1);
    const product = tf.matMul(tf.matMul(a, a), a);
    try {
      await product.data();
    } finally {
      tf.dispose([a, product]);
    }
  };

  it("paces Dawn's ticks while a readback waits for the GPU", async () => {
    const before = dawnPollCounts();
    for (let n = 384; n <= 3072 && dawnPollCounts().paused === before.paused; n *= 2) await waitForGpu(n);
    const after = dawnPollCounts();
    expect(after.ticks).toBeGreaterThan(before.ticks);
    expect(after.paused).toBeGreaterThan(before.paused);
  });

  it("leaves Dawn's ticks to spin when set to", async () => {
    setDawnPolling('spin');
    try {
      const before = dawnPollCounts();
      await waitForGpu();
      expect(dawnPollCounts().ticks).toBeGreaterThan(before.ticks);
      expect(dawnPollCounts().paused).toBe(before.paused);
    } finally {
      setDawnPolling('paced');
    }
  });

  it("passes every other setImmediate call to Node's, arguments and promisify included", async () => {
    // The setImmediate Dawn calls: the main context's (a jest test file has its own).
    const hostImmediate = vm.runInThisContext('setImmediate') as typeof setImmediate;
    expect(hostImmediate.name).toBe('paced');
    const before = dawnPollCounts();
    const args = await new Promise<unknown[]>((resolve) => hostImmediate((...received: unknown[]) => resolve(received), 1, 'two'));
    expect(args).toEqual([1, 'two']);
    // A promise's own resolve function is native too, and not one of Dawn's ticks.
    await new Promise((resolve) => hostImmediate(resolve));
    expect(await promisify(hostImmediate)('value')).toBe('value');
    expect(dawnPollCounts()).toEqual(before);
  });
});
