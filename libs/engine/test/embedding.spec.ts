import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, widenInto } from '../src/dtype';
import { loadModel } from '../src/loader';
import { EmbeddingTable } from '../src/model/embedding';
import { Checkpoint } from '../src/safetensors';
import { makeTiny, useBackend } from './helpers';

describe('the embedding table', () => {
  const every16Bits = Uint16Array.from({ length: 65536 }, (_, i) => i);

  it.each([
    ['BF16', bf16ToF32],
    ['F16', f16ToF32],
  ] as const)('widens every %s value as the whole-array conversion does, at any offset', (dtype, convert) => {
    const expected = convert(every16Bits);
    const out = new Float32Array(65536 + 3);
    widenInto(dtype, every16Bits, out, 3);
    const got = out.subarray(3);
    // NaN != NaN: compare the bits.
    expect(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(expected.buffer))).toBe(true);
  });

  it('keeps a 16-bit table in its 16 bits and gives back the f32 rows it was made of', () => {
    const values = bf16ToF32(f32ToBf16(Float32Array.from({ length: 5 * 4 }, (_, i) => Math.sin(i) * 3)));
    const table = EmbeddingTable.of(values, 4, 'BF16');
    expect(table.bytes).toBe(5 * 4 * 2);
    expect(Array.from(table.rows([4, 0, 4]))).toEqual([...values.subarray(16, 20), ...values.subarray(0, 4), ...values.subarray(16, 20)]);
    const halves = f16ToF32(f32ToF16(values));
    expect(Array.from(EmbeddingTable.of(halves, 4, 'F16').rows([2]))).toEqual(Array.from(halves.subarray(8, 12)));
    expect(EmbeddingTable.of(values, 4, 'F32').bytes).toBe(5 * 4 * 4);
  });

  it('refuses an id outside the vocabulary, naming it', () => {
    const table = EmbeddingTable.of(new Float32Array(8), 4, 'BF16');
    expect(() => table.rows([2])).toThrow('token id 2 out of range [0, 2)');
    expect(() => table.rows([-1])).toThrow('token id -1 out of range');
    expect(() => table.rows([0.5])).toThrow('token id 0.5 out of range');
  });

  describe('of a loaded checkpoint', () => {
    beforeAll(() => useBackend('wasm'));

    it.each(['BF16', 'F16', 'F32'] as const)('holds a %s checkpoint in its stored bytes, its rows the checkpoint values', async (dtype) => {
      const dir = makeTiny(`embedding-${dtype}`, { dtype });
      const lm = await loadModel(dir);
      try {
        const { vocabSize: V, hiddenSize: C } = lm.config;
        expect(lm.model.embedding.bytes).toBe(V * C * (dtype === 'F32' ? 4 : 2));
        const checkpoint = new Checkpoint(dir);
        const stored = checkpoint.read('model.embed_tokens.weight').data;
        checkpoint.close();
        const ids = [0, 7, V - 1, 7];
        const expected = ids.flatMap((id) => Array.from(stored.subarray(id * C, (id + 1) * C)));
        expect(Array.from(lm.model.embeddingRows(ids))).toEqual(expected);
      } finally {
        lm.dispose();
      }
    });
  });
});
