/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { GpuFault, readChecked, throwGpuFault, watchGpuFaults } from '../src/gpu-faults';
import { gpuLost } from '../src/webgpu';
import { loadModel } from '../src/loader';
import { argmax } from '../src/sampling';
import { makeTiny, webgpuUnavailable } from './helpers';

/**
 * Errors the WebGPU device reports only as events (gpu-faults.ts) reach the engine's readbacks:
 * tensor.data() and the decoding step's read throw what the device said, never values made after
 * it, and the next readback is clean again. On lavapipe, with invalid calls made on purpose.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`GPU fault tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

/** An invalid call on `device`: a buffer with no usage, which WebGPU rejects with a validation error. */
const invalidCall = (device: GPUDevice) => device.createBuffer({ size: 4, usage: 0 });
const USAGE_ZERO = /^the GPU rejected a call: Buffer usages must not be 0\. While calling \[Device\]\.CreateBuffer/;

suite('GPU faults on webgpu', () => {
  let device: GPUDevice;

  beforeAll(async () => {
    await selectBackend('webgpu');
    device = (tf.backend() as unknown as { device: GPUDevice }).device;
  }, 60_000);
  afterAll(() => selectBackend('wasm'));

  it("throws a tensor's readback as the error the device reported before it, then reads again", async () => {
    const values = tf.tidy(() => tf.add(tf.ones([4]), 1));
    invalidCall(device);
    invalidCall(device);
    const fault = await values.data().catch((err: unknown) => err);
    expect(fault).toBeInstanceOf(GpuFault);
    expect(fault).toMatchObject({ kind: 'validation', more: 1 });
    expect((fault as GpuFault).message).toMatch(USAGE_ZERO);
    expect((fault as GpuFault).message).toMatch(/\(and 1 more error after it\)$/);
    expect(Array.from(await values.data())).toEqual([2, 2, 2, 2]);
    values.dispose();
  });

  it('never gives the values of a copy from a buffer the device refused to make', async () => {
    // Past the device's buffer size limit: the buffer is invalid, the copy's command buffer too,
    // and the readback buffer, valid, maps with whatever it held.
    const refused = device.createBuffer({ size: device.limits.maxBufferSize + 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const readable = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(refused, 0, readable, 0, 16);
    device.queue.submit([encoder.finish()]);
    const read = () => readable.mapAsync(GPUMapMode.READ).then(() => new Float32Array(readable.getMappedRange().slice(0)));
    await expect(readChecked(device, read)).rejects.toThrow(/^the GPU rejected a call: Buffer size \(\d+\) exceeds the max buffer size limit/);
    readable.destroy();
  });

  it("throws the decoding step's readback as the error, and the batch steps on after it", async () => {
    const lm = await loadModel(makeTiny('gpu-faults'));
    const batch = new DecodeBatch<number>(lm.model);
    try {
      const first = argmax(await batch.join(0, [1, 30, 31]));
      invalidCall(device);
      await expect(batch.step(new Map([[0, first]]))).rejects.toThrow(USAGE_ZERO);
      batch.leave(0);
      const again = await batch.join(1, [1, 30, 31]);
      expect(argmax(again)).toBe(first);
    } finally {
      batch.dispose();
      lm.dispose();
    }
  }, 60_000);

  it('throws every readback once the device is lost, naming why', async () => {
    const gpu = (globalThis as unknown as { navigator: { gpu: GPU } }).navigator.gpu;
    const adapter = (await gpu.requestAdapter()) as GPUAdapter;
    const own = await adapter.requestDevice();
    watchGpuFaults(own);
    expect(() => throwGpuFault(own)).not.toThrow();
    own.destroy();
    await own.lost;
    for (let read = 0; read < 2; read++) {
      const fault = (() => {
        try {
          throwGpuFault(own);
        } catch (err) {
          return err;
        }
      })();
      expect(fault).toBeInstanceOf(GpuFault);
      expect(fault).toMatchObject({ kind: 'lost', message: 'the GPU device was lost: destroyed, device was destroyed' });
    }
  });

  // Last: the backend's device stays lost for the rest of this file.
  it("announces the loss of the backend's own device (gpuLost), and its readbacks throw it", async () => {
    const values = tf.tidy(() => tf.add(tf.ones([4]), 1));
    let announced: GpuFault | null = null;
    void gpuLost().then((fault) => (announced = fault));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(announced).toBeNull();
    device.destroy();
    const fault = await gpuLost();
    expect(fault).toMatchObject({ kind: 'lost', message: 'the GPU device was lost: destroyed, device was destroyed' });
    await expect(values.data()).rejects.toThrow('the GPU device was lost: destroyed');
  });
});
