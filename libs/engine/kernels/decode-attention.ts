// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/decode-attention.wasm.ts (generated, committed) and runs it on
// tfjs-wasm's own memory, which it imports: it reads the input tensors and writes the
// output tensor where tfjs keeps them, without copying.
//
// Nothing here may use static data (lookup tables, strings): a data segment would be
// written into tfjs's heap when the module is instantiated. That is why exp is computed
// below by a polynomial instead of Mathf.exp, whose tables live in a data segment.

/** An additive mask value below this marks a column the query must not see (KVCache's MASKED is -1e9). */
const HIDDEN: f32 = -1e8;

/**
 * Attention for one decoding step: one new query token per sequence, against every cached
 * key and value of that sequence. Grouped-query layout, as in model/llama.ts:
 *
 *   q     [groups, G, D]   the G query heads that share one KV head (already scaled by 1/sqrt(D))
 *   k, v  [groups, S, D]   that KV head's cached keys and values (S columns)
 *   mask  [B, S]          additive mask per sequence (0: attend, MASKED: padding)
 *   out   [groups, G, D]
 *
 * with groups = B * kvHeads (group g belongs to sequence g / kvHeads). D must be a
 * multiple of 4 (one f32x4 lane group per 4 dimensions).
 *
 * Each query row is one pass over the columns with an online softmax (Milakov and
 * Gimelshein, 2018): keep the running maximum m of the scores, the running sum l of
 * exp(score - m), and the output accumulated with the same weights; when a larger score
 * arrives, rescale l and the accumulator by exp(old m - new m). At the end divide by l.
 * The result equals softmax(q k^T + mask) v, without storing the scores. Masked columns
 * are skipped: their weight, exp(-1e9 + ...), is exactly 0 in float32 anyway.
 */
export function decodeAttention(
  q: usize,
  k: usize,
  v: usize,
  mask: usize,
  out: usize,
  groups: i32,
  G: i32,
  S: i32,
  D: i32,
  kvHeads: i32,
): void {
  const rowBytes = (<usize>D) << 2;
  for (let g = 0; g < groups; g++) {
    const maskRow = mask + (((<usize>(g / kvHeads)) * <usize>S) << 2);
    const keys = k + <usize>g * <usize>S * rowBytes;
    const values = v + <usize>g * <usize>S * rowBytes;
    for (let i = 0; i < G; i++) {
      const query = q + <usize>(g * G + i) * rowBytes;
      const acc = out + <usize>(g * G + i) * rowBytes;
      fill(acc, rowBytes, 0);
      let m: f32 = -Infinity;
      let l: f32 = 0;
      for (let s = 0; s < S; s++) {
        const bias = load<f32>(maskRow + ((<usize>s) << 2));
        if (bias < HIDDEN) continue;
        const score = dot(query, keys + <usize>s * rowBytes, rowBytes) + bias;
        if (score > m) {
          const rescale = expf(m - score);
          l *= rescale;
          scale(acc, rowBytes, rescale);
          m = score;
        }
        const p = expf(score - m);
        l += p;
        addScaled(acc, values + <usize>s * rowBytes, rowBytes, p);
      }
      // Every column masked (never so in decoding: a row always sees its newest token): zeros.
      if (l > 0) scale(acc, rowBytes, 1 / l);
    }
  }
}

/** sum_d a[d] * b[d] over `bytes` bytes of float32. */
function dot(a: usize, b: usize, bytes: usize): f32 {
  let sum = f32x4.splat(0);
  for (let d: usize = 0; d < bytes; d += 16) sum = f32x4.add(sum, f32x4.mul(v128.load(a + d), v128.load(b + d)));
  return f32x4.extract_lane(sum, 0) + f32x4.extract_lane(sum, 1) + f32x4.extract_lane(sum, 2) + f32x4.extract_lane(sum, 3);
}

/** acc += p * x */
function addScaled(acc: usize, x: usize, bytes: usize, p: f32): void {
  const pp = f32x4.splat(p);
  for (let d: usize = 0; d < bytes; d += 16) v128.store(acc + d, f32x4.add(v128.load(acc + d), f32x4.mul(pp, v128.load(x + d))));
}

/** x *= c */
function scale(x: usize, bytes: usize, c: f32): void {
  const cc = f32x4.splat(c);
  for (let d: usize = 0; d < bytes; d += 16) v128.store(x + d, f32x4.mul(v128.load(x + d), cc));
}

function fill(x: usize, bytes: usize, c: f32): void {
  const cc = f32x4.splat(c);
  for (let d: usize = 0; d < bytes; d += 16) v128.store(x + d, cc);
}

/**
 * e^x for x <= 0, as in Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two
 * parts so that n ln2 is exact), e^r by its degree-7 minimax polynomial, and 2^n put
 * straight into the float's exponent bits. Relative error about 1e-7; 0 below -87, where
 * 2^n would leave float32's normal range.
 */
function expf(x: f32): f32 {
  if (x < <f32>-87) return 0;
  const n = nearest<f32>(x * <f32>1.44269504088896341);
  const r = x - n * <f32>0.693359375 + n * <f32>2.12194440e-4;
  let p = <f32>1.9875691500e-4;
  p = p * r + <f32>1.3981999507e-3;
  p = p * r + <f32>8.3334519073e-3;
  p = p * r + <f32>4.1665795894e-2;
  p = p * r + <f32>1.6666665459e-1;
  p = p * r + <f32>5.0000001201e-1;
  return (p * r * r + r + 1) * reinterpret<f32>((<i32>n + 127) << 23);
}
