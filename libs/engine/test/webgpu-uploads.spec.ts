import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { gpuPrototype, wrapMethod } from '../src/kernels/gpu-counters';
import { webgpuUnavailable } from './helpers';

/**
 * Host values reach the GPU through queue.writeBuffer (webgpu-uploads.ts) rather than a staging
 * buffer made for each: every kind tfjs uploads arrives whole, also into a buffer the pool hands
 * out again while work that read its last tensor is recorded and not yet submitted. On lavapipe
 * where there is no GPU; in CI a missing adapter fails these tests.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu upload tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

suite('uploads of host values on webgpu', () => {
  beforeAll(() => selectBackend('webgpu'));
  afterAll(() => selectBackend('wasm'));

  it('writes float32, int32 and bool values whole, and makes no staging buffer for them', async () => {
    // Buffers of these sizes in the pool, as a step's are after the first: tfjs writes a new
    // buffer mapped at creation, and a pooled one through a staging buffer.
    const warm = [tf.add(tf.tensor1d(new Float32Array(1000)), 0), tf.add(tf.tensor1d(new Int32Array(1000), 'int32'), tf.scalar(0, 'int32'))];
    await Promise.all(warm.map((t) => t.data()));
    tf.dispose(warm);
    const staging: number[] = [];
    const unwrap = wrapMethod(gpuPrototype('GPUDevice'), 'createBuffer', (call, _, [descriptor]) => {
      if ((descriptor as GPUBufferDescriptor).usage & GPUBufferUsage.MAP_WRITE) staging.push((descriptor as GPUBufferDescriptor).size);
      return call();
    });
    try {
      const floats = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 1e3);
      const ints = Int32Array.from({ length: 1000 }, (_, i) => i * 7919 - 3_000_000);
      const bools = Array.from({ length: 1000 }, (_, i) => i % 3 === 0);
      // Through a program, which uploads its inputs.
      const [a, b, c] = [tf.add(tf.tensor1d(floats), 0), tf.add(tf.tensor1d(ints, 'int32'), tf.scalar(0, 'int32')), tf.logicalNot(tf.tensor1d(bools, 'bool'))];
      expect(await a.data()).toEqual(floats.map((x) => x + 0));
      expect(await b.data()).toEqual(ints);
      expect(Array.from(await c.data())).toEqual(bools.map((x) => (x ? 0 : 1)));
      tf.dispose([a, b, c]);
      expect(staging).toEqual([]);
    } finally {
      unwrap();
    }
  });

  it("gives a pooled buffer its new values ahead of the recorded work that reads them, after work that read the buffer's last ones", async () => {
    // A tensor read by a recorded program, disposed, its buffer back in the pool at the submit;
    // then new values in a tensor of the same size, read by the next program.
    const sums: tf.Tensor[] = [];
    for (let round = 0; round < 40; round++) {
      const values = new Float32Array(4096).fill(round);
      const input = tf.tensor1d(values);
      sums.push(tf.sum(tf.mul(input, 2)));
      input.dispose();
    }
    const got = await Promise.all(sums.map((s) => s.data()));
    expect(got.map((g) => g[0])).toEqual(Array.from({ length: 40 }, (_, round) => 2 * 4096 * round));
    tf.dispose(sums);
  });
});
