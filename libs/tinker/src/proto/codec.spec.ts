import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  TinkerProtocolError,
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
  readPacked,
  writePacked,
} from './codec';

describe('tinker_public codec', () => {
  it('decodes the body the real SDK (tinker 0.25.0, request_conv.py) writes for forward_backward', () => {
    // fixtures/sdk-forward-backward-request.bin: tests/e2e/python/make_codec_fixture.py
    const bytes = readFileSync(join(__dirname, 'fixtures', 'sdk-forward-backward-request.bin'));
    const request = decodeForwardBackwardRequest(bytes);
    expect(request.modelId).toBe('00000000-0000-4000-8000-000000000001:train:0');
    expect(request.seqId).toBe(7);
    expect(request.lossFn).toBe('ppo');
    expect(request.forwardOnly).toBe(false);
    expect(request.lossFnConfig.clip_low_threshold).toBeCloseTo(0.7, 12);
    expect(request.lossFnConfig.clip_high_threshold).toBeCloseTo(1.3, 12);
    expect(request.data).toHaveLength(2);
    expect(request.data[0].modelInput).toEqual([10, 17, 24, 31]);
    expect(request.data[0].lossFnInputs.target_tokens).toEqual({ dtype: 'int64', shape: [4], values: [17, 24, 31, 2] });
    expect(request.data[0].lossFnInputs.weights).toEqual({ dtype: 'float32', shape: [4], values: [0, 0, 1, 1] });
    // Two encoded_text chunks make one model input.
    expect(request.data[1].modelInput).toEqual([5, 6, 7]);
    expect(request.data[1].lossFnInputs.logprobs.values).toEqual([-0.5, -1.25, -2]);
    expect(request.data[1].lossFnInputs.advantages.values).toEqual([1.5, 1.5, -0.5]);
  });

  it('encodes requests the way it decodes them', () => {
    const request = {
      modelId: 'm',
      seqId: 3,
      lossFn: 'cross_entropy',
      lossFnConfig: {},
      forwardOnly: true,
      data: [{ modelInput: [1, 2], lossFnInputs: { target_tokens: { dtype: 'int64' as const, shape: [2], values: [2, 3] } } }],
    };
    expect(decodeForwardBackwardRequest(encodeForwardBackwardRequest(request))).toEqual(request);
  });

  it('writes ForwardBackwardOutput as one ArrayRecord of float32 BatchedTensors with int64 byte offsets', () => {
    const bytes = encodeForwardBackwardOutput({
      lossFnOutputs: [{ logprobs: Float32Array.from([-1, -2.5]) }, { logprobs: Float32Array.from([-0.25]) }, { logprobs: new Float32Array(0) }],
      metrics: { 'loss:sum': 3.75 },
    });
    const decoded = decodeForwardBackwardOutput(bytes);
    expect(decoded.metrics).toEqual({ 'loss:sum': 3.75 });
    expect(decoded.lossFnOutputs).toEqual([{ logprobs: [-1, -2.5] }, { logprobs: [-0.25] }, { logprobs: [] }]);
  });

  it('writes SampleResponse with int32 tokens and float32 logprobs', () => {
    const bytes = encodeSampleResponse({ sequences: [{ stopReason: 'length', tokens: [4, 5], logprobs: [-0.5, -1] }] });
    expect(bytes.byteLength).toBeGreaterThan(0);
  });

  it('refuses what the SDK would never send, saying what is wrong', () => {
    expect(() => decodeForwardBackwardRequest(Uint8Array.from([0xff, 0xff, 0xff]))).toThrow(TinkerProtocolError);
    expect(() => readPacked(Uint8Array.from([1, 2, 3]), 'int32', 'tokens')).toThrow('tokens: 3 bytes is not a whole number of int32 values');
    expect(readPacked(writePacked([1, -2, 2 ** 40], 'int64'), 'int64', 'x')).toEqual([1, -2, 2 ** 40]);
  });
});
