import type { HalfDtype, StorageDtype } from '../dtype';

/**
 * WGSL that reads a weight held on the GPU in 16 bits (dtype.ts's halfPairs: two values a
 * 32-bit word, the lower column in the low half). `halfPair(p)` gives a word's two values as
 * f32: a bf16 is the top half of an f32, moved there by a shift; an f16 is unpacked by WGSL's
 * unpack2x16float. Both are core WGSL, so no `shader-f16` feature is needed, and the products
 * still multiply and accumulate in f32: the same weights give the same sums as their f32 copy.
 */
export function halfPairWgsl(dtype: HalfDtype): string {
  return dtype === 'BF16'
    ? 'fn halfPair(p : u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(p << 16u), bitcast<f32>(p & 0xffff0000u)); }'
    : 'fn halfPair(p : u32) -> vec2<f32> { return unpack2x16float(p); }';
}

/**
 * The binding of a weight `name` read as vec4 columns, and `fn ${name}4(i) -> vec4<f32>`, its
 * i-th group of four columns: an array<vec4<f32>> for F32, for 16 bits an array<vec2<u32>>
 * (four values in two words) unpacked by halfPair.
 */
export function vec4WeightWgsl(binding: string, name: string, dtype: StorageDtype): string {
  if (dtype === 'F32') {
    return `${binding} var<storage, read> ${name} : array<vec4<f32>>;
fn ${name}4(i : u32) -> vec4<f32> { return ${name}[i]; }`;
  }
  return `${binding} var<storage, read> ${name} : array<vec2<u32>>;
${halfPairWgsl(dtype)}
fn ${name}4(i : u32) -> vec4<f32> {
  let p = ${name}[i];
  return vec4<f32>(halfPair(p.x), halfPair(p.y));
}`;
}
