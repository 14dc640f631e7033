import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { countGpuWork } from '../src/kernels/gpu-counters';
import { webgpuUnavailable } from './helpers';

/**
 * countGpuWork counts the WebGPU work made while it runs, whoever makes it, and calls of it that
 * overlap each count their own span. On lavapipe where there is no GPU; in CI (CI=true) a
 * missing adapter fails these tests instead of skipping them.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`gpu counter tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

suite('countGpuWork', () => {
  /** 2,048 ones on the GPU (tfjs runs ops on fewer than 1,000 elements on the CPU). */
  let ones: tf.Tensor;
  beforeAll(async () => {
    await selectBackend('webgpu');
    ones = tf.fill([2048], 1);
  });
  afterAll(async () => {
    ones.dispose();
    await selectBackend('wasm');
  });

  /** One tfjs op on webgpu, its result read back: one dispatch and one readback of 2,048 floats. */
  async function oneOp(): Promise<void> {
    const sum = tf.add(ones, ones);
    await sum.data();
    sum.dispose();
  }

  it('counts the dispatches and readbacks of a piece of code', async () => {
    const { counts } = await countGpuWork(oneOp);
    expect(counts.dispatches).toBe(1);
    expect(counts.reads).toBe(1);
    expect(counts.readBytes).toBe(2048 * 4);
  });

  it('counts each of two calls that overlap over its own span, and nothing after them', async () => {
    let finishFirst = () => undefined as void;
    const firstMayFinish = new Promise<void>((resolve) => (finishFirst = resolve));
    // The first call runs one op, then waits; the second starts, runs one op (made while both
    // run, so both count it), lets the first finish, and runs another once the first has ended.
    const first = countGpuWork(async () => {
      await oneOp();
      await firstMayFinish;
    });
    const second = await countGpuWork(async () => {
      await oneOp();
      finishFirst();
      await first;
      await oneOp();
    });
    expect((await first).counts.dispatches).toBe(2);
    expect(second.counts.dispatches).toBe(2);
    // Counting again after both sees only its own op.
    expect((await countGpuWork(oneOp)).counts.dispatches).toBe(1);
  });
});
