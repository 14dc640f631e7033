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

/**
 * How a program reads element (k, c) of a weight W [K, N] bound as `name`: as f32, or held in 16
 * bits (two columns a word). `binding` is the name with the mark multiOutputBindings takes
 * ('name:u32' for 16 bits), `helpers` the WGSL functions `at` calls, `at(k, c)` the WGSL of the
 * element.
 */
export function weightReader(name: string, dtype: StorageDtype, N: number): { binding: string; helpers: string; at: (k: string, c: string) => string } {
  if (dtype === 'F32') return { binding: name, helpers: '', at: (k, c) => `${name}[${k} * ${N}u + ${c}]` };
  return {
    binding: `${name}:u32`,
    helpers: `${halfPairWgsl(dtype)}
/** W's element (k, c): one half of the word holding columns c and c ^ 1. */
fn ${name}At(k : u32, c : u32) -> f32 {
  let pair = halfPair(${name}[k * ${N / 2}u + c / 2u]);
  return select(pair.x, pair.y, (c & 1u) == 1u);
}`,
    at: (k, c) => `${name}At(${k}, ${c})`,
  };
}

/**
 * Where a program reads the embedding table, [vocab, hidden] as f32 or in 16 bits: the table
 * itself, row-major (an untied model's, EmbeddingTable.onGpu), or a tied model's lm_head W
 * [hidden, vocab], the table transposed, whose column `id` is the table's row `id`.
 */
export interface EmbeddingSource {
  dtype: StorageDtype;
  transposed: boolean;
  vocab: number;
  hidden: number;
}

/** weightReader for an embedding source: `binding` and `helpers` as weightReader's, `at(id, h)` the WGSL of the table's element (id, h). */
export function embeddingReader(name: string, source: EmbeddingSource): { binding: string; helpers: string; at: (id: string, h: string) => string } {
  const w = weightReader(name, source.dtype, source.transposed ? source.vocab : source.hidden);
  return { ...w, at: (id, h) => (source.transposed ? w.at(h, id) : w.at(id, h)) };
}

/** A key that tells embedding sources apart where their programs differ. */
export function embeddingSourceKey(source: EmbeddingSource): string {
  return `${source.dtype}_${source.transposed ? 't' : 'r'}${source.vocab}x${source.hidden}`;
}
