/**
 * Conversions between the storage dtypes of checkpoints and float32, the only float dtype
 * the compute backends use here. bf16 is the top half of an f32, f16 is IEEE half precision.
 */

export type StorageDtype = 'F32' | 'F16' | 'BF16';

export const BYTES_PER_ELEMENT: Record<StorageDtype, number> = { F32: 4, F16: 2, BF16: 2 };

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function bf16ToF32(src: Uint16Array): Float32Array {
  const out = new Float32Array(src.length);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
  return out;
}

/** Round to nearest even, as torch does, so a round trip through bf16 matches PyTorch's. */
export function f32ToBf16(src: Float32Array): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const x = bits[i];
    if ((x & 0x7fffffff) > 0x7f800000) {
      out[i] = (x >>> 16) | 0x40; // keep NaN a quiet NaN
    } else {
      out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
    }
  }
  return out;
}

/** `value` rounded to a storage dtype (round to nearest even), as a number: what torch's .to(dtype) gives. */
export function roundTo(value: number, dtype: StorageDtype): number {
  const x = Float32Array.of(value);
  if (dtype === 'BF16') return bf16ToF32(f32ToBf16(x))[0];
  if (dtype === 'F16') return f16ToF32(f32ToF16(x))[0];
  return x[0];
}

export function f16ToF32(src: Uint16Array): Float32Array {
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = halfToFloat(src[i]);
  return out;
}

export function f32ToF16(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = floatToHalf(src[i]);
  return out;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * Writes 16-bit values (bf16 or f16 bits) as f32 into `out` from element `at`: a bf16 is the top
 * half of its f32, an f16 is converted.
 */
export function widenInto(dtype: 'F16' | 'BF16', src: Uint16Array, out: Float32Array, at: number): void {
  if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer, out.byteOffset + 4 * at, src.length);
    for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
  } else {
    for (let i = 0; i < src.length; i++) out[at + i] = halfToFloat(src[i]);
  }
}

/** Round to nearest even, with overflow to infinity and gradual underflow. */
function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  let e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const halfway = 1 << (shift - 1);
    let m = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    if (rest > halfway || (rest === halfway && m & 1)) m++;
    return sign | m;
  }
  let m = mantissa >>> 13;
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m++;
    if (m === 0x400) {
      m = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | m;
}

export function toFloat32(bytes: Uint8Array, dtype: StorageDtype): Float32Array {
  // Typed views need an aligned offset: copy only when the bytes do not start on one.
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : Uint8Array.from(bytes);
  switch (dtype) {
    case 'F32':
      return new Float32Array(aligned.buffer, aligned.byteOffset, aligned.length / 4);
    case 'F16':
      return f16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2));
    case 'BF16':
      return bf16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2));
  }
}

/** [rows, cols] row-major to [cols, rows], in JS so the wasm heap never holds both copies. */
export function transpose2d(values: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(values.length);
  const block = 64;
  for (let r0 = 0; r0 < rows; r0 += block) {
    for (let c0 = 0; c0 < cols; c0 += block) {
      const rEnd = Math.min(r0 + block, rows);
      const cEnd = Math.min(c0 + block, cols);
      for (let r = r0; r < rEnd; r++) for (let c = c0; c < cEnd; c++) out[c * rows + r] = values[r * cols + c];
    }
  }
  return out;
}

export function fromFloat32(values: Float32Array, dtype: StorageDtype): Uint8Array {
  switch (dtype) {
    case 'F32':
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    case 'F16': {
      const half = f32ToF16(values);
      return new Uint8Array(half.buffer);
    }
    case 'BF16': {
      const half = f32ToBf16(values);
      return new Uint8Array(half.buffer);
    }
  }
}

/** The 16-bit storage dtypes. */
export type HalfDtype = Exclude<StorageDtype, 'F32'>;

/**
 * `values` in a 16-bit dtype, two to a 32-bit word: element 2i in the low half of word i,
 * 2i + 1 in the high half, as a little-endian Uint16Array of them lies in memory. For a row-major
 * [K, N] weight with N even, a word holds two neighbouring columns of one row. Values that came
 * from a checkpoint of that dtype convert exactly.
 */
export function halfPairs(values: Float32Array, dtype: HalfDtype): Int32Array {
  if (values.length % 2 !== 0) throw new Error(`halfPairs: ${values.length} values do not pair up`);
  const half = dtype === 'BF16' ? f32ToBf16(values) : f32ToF16(values);
  return new Int32Array(half.buffer, half.byteOffset, half.length / 2);
}
