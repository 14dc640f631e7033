import * as fs from 'node:fs';
import * as path from 'node:path';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '../src/dtype';
import { ModelLoadError } from '../src/errors';
import { Checkpoint, SafetensorsFile, writeSafetensors } from '../src/safetensors';
import { tempDir } from './helpers';

describe('float16 / bfloat16 conversion', () => {
  it('encodes f16 exactly where the format can', () => {
    const values = new Float32Array([0, -0, 1, -2, 0.5, 65504, 6.103515625e-5, 5.960464477539063e-8, Infinity, -Infinity]);
    const bits = f32ToF16(values);
    expect(Array.from(bits.slice(0, 6))).toEqual([0x0000, 0x8000, 0x3c00, 0xc000, 0x3800, 0x7bff]);
    expect(Array.from(f16ToF32(bits))).toEqual(Array.from(values));
  });

  it('rounds f16 to nearest even, overflows to infinity, keeps NaN', () => {
    // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
    expect(f32ToF16(new Float32Array([1 + 2 ** -11]))[0]).toBe(0x3c00);
    expect(f32ToF16(new Float32Array([1 + 3 * 2 ** -11]))[0]).toBe(0x3c02);
    expect(f32ToF16(new Float32Array([70000]))[0]).toBe(0x7c00);
    expect(Number.isNaN(f16ToF32(f32ToF16(new Float32Array([NaN])))[0])).toBe(true);
  });

  it('treats bf16 as the top half of an f32, rounding to nearest even', () => {
    expect(Array.from(bf16ToF32(new Uint16Array([0x3f80, 0xc000, 0x3f00])))).toEqual([1, -2, 0.5]);
    expect(f32ToBf16(new Float32Array([1]))[0]).toBe(0x3f80);
    // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1); just above rounds up.
    expect(f32ToBf16(new Float32Array([1 + 2 ** -8]))[0]).toBe(0x3f80);
    expect(f32ToBf16(new Float32Array([1 + 2 ** -8 + 2 ** -12]))[0]).toBe(0x3f81);
    const x = new Float32Array([3.14159, -1234.5, 1e-3]);
    const back = bf16ToF32(f32ToBf16(x));
    x.forEach((v, i) => expect(Math.abs(back[i] - v) / Math.abs(v)).toBeLessThan(2 ** -8));
  });
});

describe('safetensors', () => {
  const dir = tempDir('st');

  it('writes and reads back tensors of every dtype, tensor by tensor', () => {
    const file = path.join(dir, 'a.safetensors');
    const a = Float32Array.from({ length: 12 }, (_, i) => i * 0.25 - 1);
    writeSafetensors(
      file,
      {
        'b.weight': { shape: [3, 4], data: a, dtype: 'F32' },
        'a.half': { shape: [12], data: a, dtype: 'F16' },
        'c.brain': { shape: [2, 6], data: a, dtype: 'BF16' },
      },
      { format: 'pt' },
    );
    const bytes = fs.readFileSync(file);
    const headerLength = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLength) % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString());
    expect(header['__metadata__']).toEqual({ format: 'pt' });
    expect(header['a.half']).toEqual({ dtype: 'F16', shape: [12], data_offsets: [0, 24] });

    const st = SafetensorsFile.open(file);
    expect([...st.tensors.keys()].sort()).toEqual(['a.half', 'b.weight', 'c.brain']);
    for (const name of ['b.weight', 'a.half', 'c.brain']) {
      const t = st.read(name);
      expect(Array.from(t.data)).toEqual(Array.from(a)); // these values are exact in all three
    }
    expect(st.read('c.brain').shape).toEqual([2, 6]);
    st.close();
  });

  it('writes tensors whose stored bytes are given at write time, and refuses bytes that do not match the shape', () => {
    const file = path.join(dir, 'lazy.safetensors');
    const a = Float32Array.from({ length: 6 }, (_, i) => i - 2);
    const stored = new Uint8Array(f32ToBf16(a).buffer);
    let asked = 0;
    writeSafetensors(file, { lazy: { shape: [2, 3], dtype: 'BF16', data: () => (asked++, stored) } });
    expect(asked).toBe(1);
    const st = SafetensorsFile.open(file);
    expect(Array.from(st.read('lazy').data)).toEqual(Array.from(a));
    st.close();
    expect(() => writeSafetensors(file, { short: { shape: [2, 3], dtype: 'BF16', data: () => stored.subarray(2) } })).toThrow(/short: 10 bytes for shape \[2,3\] BF16/);
  });

  it('rejects truncated files and unknown tensors naming the file and tensor', () => {
    const file = path.join(dir, 'b.safetensors');
    writeSafetensors(file, { w: { shape: [4], data: new Float32Array(4) } });
    const st = SafetensorsFile.open(file);
    expect(() => st.read('nope')).toThrow(/b\.safetensors \(tensor nope\): tensor not found/);
    st.close();
    fs.truncateSync(file, fs.statSync(file).size - 4);
    expect(() => SafetensorsFile.open(file)).toThrow(ModelLoadError);
    expect(() => SafetensorsFile.open(file)).toThrow(/tensor w/);
  });

  it("gives a checkpoint tensor's shape from the header, and names a missing one", () => {
    const ckpt = path.join(dir, 'ckpt');
    fs.mkdirSync(ckpt);
    writeSafetensors(path.join(ckpt, 'model.safetensors'), { 'model.w': { shape: [2, 3], data: new Float32Array(6), dtype: 'BF16' } });
    const checkpoint = new Checkpoint(ckpt);
    expect(checkpoint.shapeOf('model.w')).toEqual([2, 3]);
    expect(() => checkpoint.shapeOf('model.nope')).toThrow(/tensor missing from checkpoint/);
    checkpoint.close();
  });
});
