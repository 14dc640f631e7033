// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/matmul.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, which it imports: it reads the input tensors and writes the output tensor
// where tfjs keeps them, without copying. No static data (see decode-attention.ts).
//
// The product computed is a model projection: out[M, N] = x[M, K] W[K, N] (+ bias[N]) with
// a large weight matrix W that never changes. It is shaped for decoding, few rows M (one
// per sequence of the decode batch): each weight is used only M times per call, so the work
// is bounded by streaming W from memory and by how many multiply-adds each loaded weight
// feeds. It is also faster than XNNPACK for prefill's hundreds of rows.
//
// 1. Packing. W is rearranged once, before its first use, into panels of 8 columns:
//
//      packed[p][k][j] = W[k][8p + j]      p < N/8, k < K, j < 8
//
//    A panel is one contiguous run of K * 8 weights, read front to back: every step along
//    k loads the next 8 weights. Read straight from the row-major W, the same 8 columns sit
//    N floats apart at each k, a new cache line (and every 1024 steps a new page) per step.
//
//    Weights come in one of two formats. f32: the 8 weights of a step are 32 bytes.
//    bf16: when every weight of W is exactly a bfloat16 (the top 16 bits of an f32, the
//    rest zero: true of every checkpoint stored in bf16, as SmolLM2, Llama and Qwen ship),
//    each weight keeps only its top half and a step is 16 bytes, four 32-bit lanes that
//    each hold two weights: lane j = W[k][8p + j] >> 16 | W[k][8p + 4 + j] & 0xffff0000.
//    The kernel widens them back with one shift (columns 0-3) and one mask (columns 4-7),
//    which gives exactly the f32 values: the products and sums, and so the result, are the
//    same bits as with f32 panels. Half the bytes stream from memory, which is what bounds
//    decoding one row (13 against 19 ms on a whole SmolLM2-135M), and the weights take half
//    the memory.
//
// 2. Register tile. The inner loop keeps a 4 x 8 block of out in 8 SIMD registers (4 rows,
//    two f32x4 halves of the panel's 8 columns). Per k it loads the panel's 8 weights once
//    (2 vectors, or 1 widened into 2), broadcasts x[r][k] for each of the 4 rows (4 splat
//    loads) and does 8 vector multiply-adds: each weight loaded feeds 4 rows. 8 accumulators
//    + 2 weights + 1 broadcast (+ the bf16 mask) fit the 16 SIMD registers of x86-64 without
//    spills (an 8 x 8 tile would need 16 accumulators). An 8 x 4 tile over 4-column panels,
//    and a dot-product form over [N, K] weights (horizontal sums at the end of each column)
//    are both much slower with V8's code. Leftover rows (M not a multiple of 4) take a 3 x 8
//    tile (3 rows at 36 GFLOP/s in cache, against 24 as a 2 x 8 and a 1 x 8 pass, on AMD
//    Zen 4), or a 2 x 8 and a 1 x 8 one. A single row (decoding one sequence) can take four
//    panels at once (oneRowWide), a 1 x 32 tile with 8 accumulators over four streams of
//    weights: faster from memory on an Intel Xeon (7.0 against 5.6 GFLOP/s for 1 x 8),
//    slower on AMD Zen 4 (7.5 against 9.5). The engine times both on the model's weights
//    (src/kernels/matmul.ts). Each output is still summed in the same order, k by k from
//    the bias, as in every other tile: a sequence gets the same bits alone as in a batch.
//    Two arithmetics, one export each (matmulF32 / matmulF32Fused, and bf16 alike), fixed
//    at compile time: a multiply then an add, or one fused f32x4.relaxed_madd (relaxed SIMD:
//    rounded once; FMA3 on x86-64, arm64). The engine runs the fused exports over both
//    formats, in inference and training alike (src/kernels/matmul-threads.ts,
//    matmulExportName): each multiply-add is one instruction instead of two, rows in 4 x 8
//    tiles go 1.2x to 1.7x faster and a training step 1.3x; bf16 panels give the same bits
//    as f32 panels of the same weights, and a sampler's products are its trainer's. One
//    tile loses: the one-row 1 x 8 tile over bf16 panels, two chains of one multiply-add
//    per 16 bytes of weights, each waiting on the FMA's latency (4 cycles on AMD Zen 3 and
//    4) instead of the add's (3), 5-13 % slower; the 1 x 32 tile's 8 chains are not bound
//    by it, and the model's plan times both. One arithmetic for every tile is what lets a
//    sequence get the same bits alone as in a batch. matmulF32 and matmulBf16 stay for
//    bench/fused.bench.ts to compare against. (src/kernels/wasm-features.ts lets Node 20's
//    V8 compile relaxed SIMD.)
//
// 3. No K blocking. Each tile runs down the whole panel, K steps, with its accumulators in
//    registers, starting from the bias (or zero) and storing once at the end. Cutting K into
//    blocks that stay in the 32 KB L1 (96-512 steps, on SmolLM2-135M's matrices, K 576 and
//    1536, and on 8192 x 2048 ones, for 1-64 rows) is never faster than the whole K and up to
//    8% slower: each block loads and stores the accumulators again.
//
// 4. Panel groups. More than 4 rows take several row tiles per panel. Panels are taken in
//    groups of about GROUP_BYTES (which stay in L2): the first row tile runs over the whole
//    group, streaming it from memory front to back as one run, and the next row tiles
//    reread it from L2. Rereading each panel right after its first pass (groups of one
//    panel) breaks the stream at every panel: on a whole SmolLM2-135M, 8 rows take 53 ms
//    that way against 43-44 ms with groups of 128-512 KB, and 16 rows 100 against 85-86 ms
//    (bf16).
//
// 5. Read-ahead (optional, per call). On some machines a core streams memory much more
//    slowly while it multiplies than while it only reads: the out-of-order window, full of
//    multiply-adds waiting on weights, holds too few cache misses at a time (an Intel Xeon,
//    Sapphire Rapids: 4 rows over 280 MB of distinct 576 x 3072 matrices at 12 GFLOP/s
//    streamed, against 32 from cache). With readAhead, each group (of
//    READ_AHEAD_GROUP_BYTES) is first read by a loop that does nothing but touch each of its
//    cache lines, which keeps many misses in flight, and the tiles then run over it from L2:
//    18 GFLOP/s there for 4 rows, 25 against 19 for 8. Where the core streams well while it
//    multiplies (AMD Zen 4), the extra pass loses: 15.4 against 20.4 GFLOP/s for 4 rows.
//    The products are the same either way; the engine times both on the model's own weights
//    when it loads one for inference and uses the faster (src/kernels/matmul.ts).
//
// 6. One copy of the loops per weight format. The format is a compile-time constant of each
//    copy (matmulF32, matmulBf16), so the inner loops hold only loads, multiplies and adds.
//    They must stay separate exports: behind one export that branched on the format,
//    Binaryen folds the two copies back into one whose inner loops test the format twice
//    per k step, with the flag on V8's stack (4 rows in cache at 28.4 against 41.3 GFLOP/s
//    on AMD Zen 4).
//
// 7. x interleaved for the row tiles. A tile of t rows (2-4) reads its x rows from a copy
//    made once per call, in scratch memory the caller gives (xt, as large as x), where they
//    are interleaved k by k: xt[r][k t + i] = x[r + i][k]. The tile's loop then reads x as
//    one sequential stream, t floats per step at constant offsets, beside the one stream
//    of weights, instead of t streams K floats apart (on AMD Zen 4 over a whole
//    SmolLM2-135M, streamed from memory: 4 rows in 32 ms against 45-48, 3 rows 27-28 against
//    31-35; in cache, the same). A single row reads x in place: it is already one stream.
//
// 8. 8-bit weights (q8: the Q8_0 layout of llama.cpp, for serving). Along k, each column's
//    weights are cut into blocks of 32 (K a multiple of 32), stored as int8 with one f32
//    scale per block: d = max |w| / 127, q = round(w / d) (to nearest, ties to even). A panel
//    block holds the 8 columns' 32 steps as 16 pairs of steps, 16 bytes each, every column's
//    two weights side by side (bytes 2j and 2j + 1: W[2s][j], W[2s + 1][j]), then the 8
//    scales: 288 bytes for 256 weights, 1.125 bytes a weight. x's rows are quantized the same
//    way, per block of 32 along k, once per call (quantizeRows, into the scratch xt), as int16
//    values (so that a 32-bit splat gives a pair of steps) followed by the row's scales. A
//    pair of steps is then two 8-byte loads that widen to int16 as they load
//    (v128.load8x8_s: one instruction each on x86-64, where a 16-byte load widened in two
//    halves takes three or four; 5 % more in cache on AMD Zen 4) and two
//    i32x4.dot_i16x8_s (lane j: W[2s][j] x[2s] + W[2s + 1][j] x[2s + 1]) into integer
//    accumulators, exact; at the end of each block, its integer sums, as f32, times the
//    weight scale times the x scale are added to the f32 accumulators that started from the
//    bias. A single row reads a quarter of the f32 bytes and does half the vector work per
//    weight. Rows go four at a time, then in a pair, then one: each widened pair of steps
//    feeds all the tile's rows. The 4-row tile keeps its 8 integer sums in registers and its
//    f32 sums in out itself, read and written once per block (16 of them would not fit the
//    16 SIMD registers beside the sums). The one-row tile is always the narrow one
//    (oneRowWide is ignored).
//
// 9. Panels in pairs (for serving bf16 weights one sequence at a time). The one-row 1 x 8
//    tile has two chains of multiply-adds, one step each per 16 bytes of bf16 panel: it waits
//    on their latency, not on memory, wherever a core reads fast (bf16 decoding at 40-57 % of
//    its memory bound on an AMD Zen 5 class machine, docs/benchmarks.md, "One sequence
//    against the memory limit"); the 1 x 32 tile has eight chains but four streams. Packed in
//    pairs, panels 2q and 2q + 1 alternate step by step (a 32-byte run per k in bf16, 64 in
//    f32), and one row takes the pair as one stream with four chains (tile1Pair). Rows go two
//    at a time over the whole pair (tile2Pair: 8 accumulators, x read in place), so every
//    pass reads whole runs. Each output is still one chain, k by k from the bias: the same
//    bits as unpaired panels. What it costs: two rows over a pair use each weight twice where
//    the 4 x 8 tile uses it four times, so batches of 4 and more stream the pair's bytes
//    twice as fast per multiply-add, which f32 panels (twice the bytes) pay for. Which layout
//    is faster depends on the machine (pairs are slower for one row on some Intel Xeons), so
//    panels are packed one after another and relayPairs re-lays them in place where timing
//    on the model's weights chooses pairs (or a deployment asks: oneRowTile 'paired'). The
//    paired exports (matmulF32PairedFused, matmulBf16PairedFused) fix the layout at compile
//    time, as section 6 fixes the format; they are fused only.
//
// Loop order: panel groups outermost, so each panel streams from memory once per call, while
// the x rows (M * K floats: a few KB when decoding) stay in cache across all panels.

/** Bytes of panels one group holds (section 4): half of a common 512 KB L2. */
const GROUP_BYTES: i32 = 256 << 10;

/** Bytes of panels one group holds with read-ahead (section 5): 16-64 KB measured alike, 1 MB slower. */
const READ_AHEAD_GROUP_BYTES: i32 = 64 << 10;

/** Bytes between the loads of the read-ahead loop: one per cache line. */
const LINE: usize = 64;

/** The bf16 weights of a 32-bit lane's top half (section 1). */
const HIGH: i32 = 0xffff0000;

/**
 * 1 when every float of w[0..count) is exactly a bfloat16 (its low 16 bits are zero), else 0:
 * whether pack() may use the bf16 format without changing a single weight.
 */
export function isBf16(w: usize, count: i32): i32 {
  let low = i32x4.splat(0);
  const end = w + ((<usize>count) << 2);
  let p = w;
  for (; p + 16 <= end; p += 16) low = v128.or(low, v128.load(p));
  let tail: u32 = 0;
  for (; p < end; p += 4) tail |= load<u32>(p);
  return v128.any_true(v128.andnot(low, i32x4.splat(HIGH))) || (tail & 0xffff) != 0 ? 0 : 1;
}

/**
 * Rearranges w [K, N] (row-major) into panels of 8 columns as above, f32 or (bf16 != 0,
 * only where isBf16 holds) bf16; paired != 0 interleaves them in pairs (section 9, N a
 * multiple of 16). N must be a multiple of 8. Reads w sequentially, row by row.
 */
export function pack(w: usize, packed: usize, K: i32, N: i32, bf16: i32, paired: i32): void {
  if (bf16) packAs(w, packed, K, N, true, paired != 0);
  else packAs(w, packed, K, N, false, paired != 0);
}

@inline function packAs(w: usize, packed: usize, K: i32, N: i32, bf16: bool, paired: bool): void {
  const step = stepBytes(bf16);
  const panelBytes = (<usize>K) * step;
  const high = i32x4.splat(HIGH);
  let src = w;
  for (let k = 0; k < K; k++) {
    for (let p = 0; p < N >> 3; p++) {
      // Panel p's step k; in pairs, its pair's step k, the second panel's half after the first's.
      const dst = paired ? packed + (<usize>(p >> 1)) * 2 * panelBytes + (<usize>k) * 2 * step + (<usize>(p & 1)) * step : packed + (<usize>p) * panelBytes + (<usize>k) * step;
      const lo = v128.load(src);
      const hi = v128.load(src, 16);
      if (bf16) {
        v128.store(dst, v128.or(i32x4.shr_u(lo, 16), v128.and(hi, high)));
      } else {
        v128.store(dst, lo);
        v128.store(dst, hi, 16);
      }
      src += 32;
    }
  }
}

/**
 * f32 or bf16 panels (N a multiple of 16) re-laid in place, one panel after another into
 * pairs (section 9, toPairs) or pairs back into panels: the same floats, the other layout.
 * A pair takes the bytes of its two panels, so each pair is copied into scratch (two panels'
 * bytes) and written back step by step.
 */
export function relayPairs(packed: usize, scratch: usize, K: i32, N: i32, bf16: i32, toPairs: i32): void {
  const step = stepBytes(bf16 != 0);
  const panelBytes = (<usize>K) * step;
  for (let q = 0; q < N >> 4; q++) {
    const pair = packed + <usize>q * 2 * panelBytes;
    for (let i: usize = 0; i < 2 * panelBytes; i += 16) v128.store(scratch + i, v128.load(pair + i));
    for (let k: usize = 0; k < <usize>K; k++) {
      for (let half: usize = 0; half < 2; half++) {
        const apart = half * panelBytes + k * step;
        const together = (2 * k + half) * step;
        const from = scratch + (toPairs ? apart : together);
        const to = pair + (toPairs ? together : apart);
        for (let i: usize = 0; i < step; i += 16) v128.store(to + i, v128.load(from + i));
      }
    }
  }
}

/**
 * x's rows [0, M) of x [M, K] interleaved into xt (as large as x) as the row tiles read them
 * (section 7): what matmulF32 and matmulBf16 read for tiles of 2-4 rows. Run once per
 * product, before them (a single row reads x itself and needs none).
 */
export function interleaveRows(x: usize, xt: usize, M: i32, K: i32): void {
  let r = 0;
  for (; r + 4 <= M; r += 4) interleave(x, xt, r, 4, K);
  const rest = restTile(M - r);
  if (rest) interleave(x, xt, r, rest, K);
}

/**
 * Panels [panelFrom, panelTo) of out [M, N] = x [M, K] packed + bias, with packed from pack()
 * with f32 panels (N a multiple of 8) and bias [N] or 0 for none: the columns 8 panelFrom to
 * 8 panelTo of every row. Any K, any M >= 1. xt: x interleaved by interleaveRows when M >= 2
 * (section 7). readAhead != 0: each group of panels is read once before it is multiplied
 * (section 5). oneRowWide != 0: a single row takes four panels at once (section 2). The
 * result is the same bits either way, and however the panels are divided between calls: each
 * output is one tile's sum, so threads can each take a range of panels (src/kernels/matmul-threads.ts).
 *
 * One export per weight format, each with its own copy of the loops, and not one export that
 * branches on the format: Binaryen then folded the two copies back into one whose inner
 * loops tested the format at every step, and V8 kept that flag on the stack (section 6).
 */
export function matmulF32(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, false, false, readAhead != 0, oneRowWide != 0, xt, panelFrom, panelTo);
}

/** matmulF32 for bf16 panels (section 1). */
export function matmulBf16(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, true, false, readAhead != 0, oneRowWide != 0, xt, panelFrom, panelTo);
}

/** matmulF32 with fused multiply-adds (section 2): what the engine runs over f32 panels. */
export function matmulF32Fused(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, false, true, readAhead != 0, oneRowWide != 0, xt, panelFrom, panelTo);
}

/** matmulBf16 with fused multiply-adds: what the engine runs over bf16 panels. */
export function matmulBf16Fused(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, true, true, readAhead != 0, oneRowWide != 0, xt, panelFrom, panelTo);
}

/**
 * matmulF32Fused over f32 panels packed in pairs (section 9): one row takes a pair at once
 * (oneRowWide is ignored). Threads divide them in ranges of whole pairs.
 */
export function matmulF32PairedFused(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, false, true, readAhead != 0, false, xt, panelFrom, panelTo, true);
}

/** matmulF32PairedFused over bf16 panels packed in pairs. */
export function matmulBf16PairedFused(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  matmulAs(x, packed, bias, out, M, K, N, true, true, readAhead != 0, false, xt, panelFrom, panelTo, true);
}

/** The tile that takes the rows left after the 4-row tiles: 3, 2, or none (a single row or none left). */
@inline function restTile(left: i32): i32 {
  return left == 3 ? 3 : left >= 2 ? 2 : 0;
}

/**
 * matmul with the weight format and layout fixed at compile time. Panels in pairs (section 9)
 * are taken in whole pairs: panelFrom and panelTo must be even.
 */
@inline function matmulAs(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, bf16: bool, fused: bool, readAhead: bool, oneRowWide: bool, xt: usize, panelFrom: i32, panelTo: i32, paired: bool = false): void {
  const xRow = (<usize>K) << 2;
  const outRow = (<usize>N) << 2;
  const panelBytes = (<usize>K) * stepBytes(bf16);
  const fit = (readAhead ? READ_AHEAD_GROUP_BYTES : GROUP_BYTES) / <i32>panelBytes;
  // In pairs, groups of whole pairs.
  const group = paired ? max<i32>(2, fit & ~1) : max<i32>(1, fit);
  const rest = restTile(M & 3);
  for (let first = panelFrom; first < panelTo; first += group) {
    const last = min<i32>(panelTo, first + group);
    // The first row tile's output block is a place to leave the read-ahead's (meaningless)
    // value, so that no compiler drops its loads; the tile overwrites it.
    if (readAhead) touch(packed + <usize>first * panelBytes, <usize>(last - first) * panelBytes, out + ((<usize>first) << 5));
    if (paired) {
      pairTiles(x, packed, bias, out, M, K, N, bf16, first, last);
      continue;
    }
    let r = 0;
    for (; r + 4 <= M; r += 4) {
      for (let p = first; p < last; p++) tile4(xt + <usize>r * xRow, xRow, packed + <usize>p * panelBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, outRow, bf16, fused);
    }
    if (rest == 3) {
      for (let p = first; p < last; p++) tile3(xt + <usize>r * xRow, xRow, packed + <usize>p * panelBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, outRow, bf16, fused);
      r += 3;
    } else if (rest == 2) {
      for (let p = first; p < last; p++) tile2(xt + <usize>r * xRow, xRow, packed + <usize>p * panelBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, outRow, bf16, fused);
      r += 2;
    }
    if (r < M) {
      let p = first;
      if (oneRowWide) for (; p + 4 <= last; p += 4) tile1Wide(x + <usize>r * xRow, packed + <usize>p * panelBytes, panelBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, xRow, bf16, fused);
      for (; p < last; p++) tile1(x + <usize>r * xRow, packed + <usize>p * panelBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, xRow, bf16, fused);
    }
  }
}

/**
 * Panels [first, last) (even: whole pairs) of every row, over panels in pairs (section 9):
 * rows two at a time (2 x 16 tiles, x read in place), then a last single row (1 x 16).
 * Always fused: the paired exports are the engine's only.
 */
@inline function pairTiles(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, bf16: bool, first: i32, last: i32): void {
  const xRow = (<usize>K) << 2;
  const outRow = (<usize>N) << 2;
  const pairBytes = 2 * (<usize>K) * stepBytes(bf16);
  let r = 0;
  for (; r + 2 <= M; r += 2) {
    for (let p = first; p < last; p += 2) tile2Pair(x + <usize>r * xRow, xRow, packed + <usize>(p >> 1) * pairBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, outRow, bf16);
  }
  if (r < M) {
    for (let p = first; p < last; p += 2) tile1Pair(x + <usize>r * xRow, packed + <usize>(p >> 1) * pairBytes, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0, xRow, bf16);
  }
}

/**
 * Rows [r, r + t) of x [*, K], interleaved k by k into xt at the same place: xt[r][k t + i] =
 * x[r + i][k] (section 7), for a t-row tile.
 */
function interleave(x: usize, xt: usize, r: i32, t: i32, K: i32): void {
  const xRow = (<usize>K) << 2;
  const from = x + <usize>r * xRow;
  const to = xt + <usize>r * xRow;
  for (let i = 0; i < t; i++) {
    for (let k = 0; k < K; k++) store<f32>(to + ((<usize>(k * t + i)) << 2), load<f32>(from + <usize>i * xRow + ((<usize>k) << 2)));
  }
}

/**
 * Loads one v128 from every cache line of [from, from + bytes) and stores their OR at sink
 * (section 5). Exported too for bench/matmul.bench.ts, which times it over the panels: the
 * time to stream them with no arithmetic, the memory bound of a one-row product.
 */
export function touch(from: usize, bytes: usize, sink: usize): void {
  let seen = i32x4.splat(0);
  const end = from + bytes;
  let p = from;
  for (; p + 4 * LINE <= end; p += 4 * LINE) {
    seen = v128.or(seen, v128.load(p));
    seen = v128.or(seen, v128.load(p, LINE));
    seen = v128.or(seen, v128.load(p, 2 * LINE));
    seen = v128.or(seen, v128.load(p, 3 * LINE));
  }
  for (; p < end; p += LINE) seen = v128.or(seen, v128.load(p));
  v128.store(sink, seen);
}

/**
 * `steps` rounds of 12 independent chains of f32x4.relaxed_madd, with no memory access: the
 * most multiply-adds a core can issue in the arithmetic the training and prefill tiles use
 * (128-bit SIMD, fused), and so the ceiling of any tile here. Exported for
 * bench/simd-ceiling.bench.ts, which times it; returns a lane of the sums so that no compiler
 * drops the loop.
 */
export function fmaPeak(steps: i32, seed: f32): f32 {
  const m = f32x4.splat(0.999);
  const c = f32x4.splat(1e-7);
  let a0 = f32x4.splat(seed), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  let a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (let i = 0; i < steps; i++) {
    a0 = f32x4.relaxed_madd(a0, m, c);
    a1 = f32x4.relaxed_madd(a1, m, c);
    a2 = f32x4.relaxed_madd(a2, m, c);
    a3 = f32x4.relaxed_madd(a3, m, c);
    a4 = f32x4.relaxed_madd(a4, m, c);
    a5 = f32x4.relaxed_madd(a5, m, c);
    a6 = f32x4.relaxed_madd(a6, m, c);
    a7 = f32x4.relaxed_madd(a7, m, c);
    a8 = f32x4.relaxed_madd(a8, m, c);
    a9 = f32x4.relaxed_madd(a9, m, c);
    a10 = f32x4.relaxed_madd(a10, m, c);
    a11 = f32x4.relaxed_madd(a11, m, c);
  }
  const sum = f32x4.add(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)), f32x4.add(f32x4.add(a4, a5), f32x4.add(a6, a7)));
  return f32x4.extract_lane(f32x4.add(sum, f32x4.add(f32x4.add(a8, a9), f32x4.add(a10, a11))), 0);
}

/** Bytes of one panel step, the 8 columns' weights at one k: 32 as f32, 16 as bf16 (section 1). */
@inline function stepBytes(bf16: bool): usize {
  return bf16 ? 16 : 32;
}

/** The 8 columns' weights at panel step w: columns 0-3, then 4-7 (section 1). */
@inline function weights0(w: usize, bf16: bool): v128 {
  return bf16 ? i32x4.shl(v128.load(w), 16) : v128.load(w);
}

@inline function weights1(w: usize, bf16: bool): v128 {
  return bf16 ? v128.and(v128.load(w), i32x4.splat(HIGH)) : v128.load(w, 16);
}

/**
 * acc + a b: fused (f32x4.relaxed_madd, rounded once) or a multiply then an add, fixed at
 * compile time by the export (section 2).
 */
@inline function madd(a: v128, b: v128, acc: v128, fused: bool): v128 {
  return fused ? f32x4.relaxed_madd(a, b, acc) : f32x4.add(acc, f32x4.mul(a, b));
}

/** The first 4 of the 8 columns' bias, or zero: every row's accumulators start from it. */
@inline function bias0(bias: usize, hasBias: bool): v128 {
  return hasBias ? v128.load(bias) : f32x4.splat(0);
}

@inline function bias1(bias: usize, hasBias: bool): v128 {
  return hasBias ? v128.load(bias, 16) : f32x4.splat(0);
}

/**
 * out[0..4][0..8] = bias + x[0..4][0..K] panel[0..K][0..8]: the 4 x 8 register tile, with
 * the 4 rows of x interleaved at xs (xRow = 4 K bytes each: section 7), out rows outRow bytes apart.
 */
@inline function tile4(xs: usize, xRow: usize, panel: usize, out: usize, bias: usize, hasBias: bool, outRow: usize, bf16: bool, fused: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = a0, b1 = a1;
  let c0 = a0, c1 = a1;
  let d0 = a0, d1 = a1;
  const step = stepBytes(bf16);
  let w = panel;
  for (let xk = xs, end = xs + 4 * xRow; xk < end; xk += 16, w += step) {
    const w0 = weights0(w, bf16);
    const w1 = weights1(w, bf16);
    let s = v128.load32_splat(xk);
    a0 = madd(s, w0, a0, fused);
    a1 = madd(s, w1, a1, fused);
    s = v128.load32_splat(xk, 4);
    b0 = madd(s, w0, b0, fused);
    b1 = madd(s, w1, b1, fused);
    s = v128.load32_splat(xk, 8);
    c0 = madd(s, w0, c0, fused);
    c1 = madd(s, w1, c1, fused);
    s = v128.load32_splat(xk, 12);
    d0 = madd(s, w0, d0, fused);
    d1 = madd(s, w1, d1, fused);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
  v128.store(out + 2 * outRow, c0);
  v128.store(out + 2 * outRow, c1, 16);
  v128.store(out + 3 * outRow, d0);
  v128.store(out + 3 * outRow, d1, 16);
}

/** tile4 for 3 rows. */
@inline function tile3(xs: usize, xRow: usize, panel: usize, out: usize, bias: usize, hasBias: bool, outRow: usize, bf16: bool, fused: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = a0, b1 = a1, c0 = a0, c1 = a1;
  const step = stepBytes(bf16);
  let w = panel;
  for (let xk = xs, end = xs + 3 * xRow; xk < end; xk += 12, w += step) {
    const w0 = weights0(w, bf16);
    const w1 = weights1(w, bf16);
    let s = v128.load32_splat(xk);
    a0 = madd(s, w0, a0, fused);
    a1 = madd(s, w1, a1, fused);
    s = v128.load32_splat(xk, 4);
    b0 = madd(s, w0, b0, fused);
    b1 = madd(s, w1, b1, fused);
    s = v128.load32_splat(xk, 8);
    c0 = madd(s, w0, c0, fused);
    c1 = madd(s, w1, c1, fused);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
  v128.store(out + 2 * outRow, c0);
  v128.store(out + 2 * outRow, c1, 16);
}

/** tile4 for 2 rows. */
@inline function tile2(xs: usize, xRow: usize, panel: usize, out: usize, bias: usize, hasBias: bool, outRow: usize, bf16: bool, fused: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = a0, b1 = a1;
  const step = stepBytes(bf16);
  let w = panel;
  for (let xk = xs, end = xs + 2 * xRow; xk < end; xk += 8, w += step) {
    const w0 = weights0(w, bf16);
    const w1 = weights1(w, bf16);
    let s = v128.load32_splat(xk);
    a0 = madd(s, w0, a0, fused);
    a1 = madd(s, w1, a1, fused);
    s = v128.load32_splat(xk, 4);
    b0 = madd(s, w0, b0, fused);
    b1 = madd(s, w1, b1, fused);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
}

/** tile2 over a pair of panels (section 9): out[0..2][0..16], the two rows of x read in place, xRow bytes apart. */
@inline function tile2Pair(xs: usize, xRow: usize, pair: usize, out: usize, bias: usize, hasBias: bool, outRow: usize, bf16: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let a2 = bias0(bias + 32, hasBias), a3 = bias1(bias + 32, hasBias);
  let b0 = a0, b1 = a1, b2 = a2, b3 = a3;
  const step = stepBytes(bf16);
  let w = pair;
  for (let xk = xs, end = xs + xRow; xk < end; xk += 4, w += 2 * step) {
    const w0 = weights0(w, bf16);
    const w1 = weights1(w, bf16);
    const w2 = weights0(w + step, bf16);
    const w3 = weights1(w + step, bf16);
    let s = v128.load32_splat(xk);
    a0 = madd(s, w0, a0, true);
    a1 = madd(s, w1, a1, true);
    a2 = madd(s, w2, a2, true);
    a3 = madd(s, w3, a3, true);
    s = v128.load32_splat(xk + xRow);
    b0 = madd(s, w0, b0, true);
    b1 = madd(s, w1, b1, true);
    b2 = madd(s, w2, b2, true);
    b3 = madd(s, w3, b3, true);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out, a2, 32);
  v128.store(out, a3, 48);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
  v128.store(out + outRow, b2, 32);
  v128.store(out + outRow, b3, 48);
}

/** tile1 over 4 panels side by side (panelBytes apart): out[0][0..32], the single row's tile (section 2). */
@inline function tile1Wide(x: usize, panel: usize, panelBytes: usize, out: usize, bias: usize, hasBias: bool, xRow: usize, bf16: bool, fused: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = bias0(bias + 32, hasBias), b1 = bias1(bias + 32, hasBias);
  let c0 = bias0(bias + 64, hasBias), c1 = bias1(bias + 64, hasBias);
  let d0 = bias0(bias + 96, hasBias), d1 = bias1(bias + 96, hasBias);
  const step = stepBytes(bf16);
  let w = panel;
  for (let xk = x, end = x + xRow; xk < end; xk += 4, w += step) {
    const s = v128.load32_splat(xk);
    a0 = madd(s, weights0(w, bf16), a0, fused);
    a1 = madd(s, weights1(w, bf16), a1, fused);
    b0 = madd(s, weights0(w + panelBytes, bf16), b0, fused);
    b1 = madd(s, weights1(w + panelBytes, bf16), b1, fused);
    c0 = madd(s, weights0(w + 2 * panelBytes, bf16), c0, fused);
    c1 = madd(s, weights1(w + 2 * panelBytes, bf16), c1, fused);
    d0 = madd(s, weights0(w + 3 * panelBytes, bf16), d0, fused);
    d1 = madd(s, weights1(w + 3 * panelBytes, bf16), d1, fused);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out, b0, 32);
  v128.store(out, b1, 48);
  v128.store(out, c0, 64);
  v128.store(out, c1, 80);
  v128.store(out, d0, 96);
  v128.store(out, d1, 112);
}

/** tile4 for 1 row. */
@inline function tile1(x: usize, panel: usize, out: usize, bias: usize, hasBias: bool, xRow: usize, bf16: bool, fused: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  const step = stepBytes(bf16);
  let w = panel;
  for (let xk = x, end = x + xRow; xk < end; xk += 4, w += step) {
    const s = v128.load32_splat(xk);
    a0 = madd(s, weights0(w, bf16), a0, fused);
    a1 = madd(s, weights1(w, bf16), a1, fused);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
}

/**
 * tile1 over a pair of panels (section 9): out[0][0..16], four chains over the pair's one
 * stream of weights, each output still summed k by k from the bias.
 */
@inline function tile1Pair(x: usize, pair: usize, out: usize, bias: usize, hasBias: bool, xRow: usize, bf16: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = bias0(bias + 32, hasBias), b1 = bias1(bias + 32, hasBias);
  const step = stepBytes(bf16);
  let w = pair;
  for (let xk = x, end = x + xRow; xk < end; xk += 4, w += 2 * step) {
    const s = v128.load32_splat(xk);
    a0 = madd(s, weights0(w, bf16), a0, true);
    a1 = madd(s, weights1(w, bf16), a1, true);
    b0 = madd(s, weights0(w + step, bf16), b0, true);
    b1 = madd(s, weights1(w + step, bf16), b1, true);
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out, b0, 32);
  v128.store(out, b1, 48);
}

/** Weights of one q8 block along k (section 8). */
const Q8_BLOCK: i32 = 32;

/** Bytes of one q8 panel block: 16 pairs of steps of 16 int8 weights, then 8 f32 scales (section 8). */
const Q8_PANEL_BLOCK: usize = 288;

/**
 * Rearranges w [K, N] (row-major f32) into q8 panels (section 8): panel p, block b at
 * packed + (p K/32 + b) 288. K a multiple of 32, N a multiple of 8.
 */
export function packQ8(w: usize, packed: usize, K: i32, N: i32): void {
  const blocks = K / Q8_BLOCK;
  const row = (<usize>N) << 2;
  for (let p = 0; p < N >> 3; p++) {
    for (let b = 0; b < blocks; b++) {
      const block = packed + (<usize>(p * blocks + b)) * Q8_PANEL_BLOCK;
      for (let j = 0; j < 8; j++) {
        const column = w + (<usize>(b * Q8_BLOCK)) * row + ((<usize>(8 * p + j)) << 2);
        let amax: f32 = 0;
        for (let k = 0; k < Q8_BLOCK; k++) amax = max<f32>(amax, abs<f32>(load<f32>(column + <usize>k * row)));
        const d: f32 = amax / 127;
        const id: f32 = d != 0 ? 1 / d : 0;
        store<f32>(block + 256 + ((<usize>j) << 2), d);
        for (let k = 0; k < Q8_BLOCK; k++) {
          const q = <i32>nearest<f32>(load<f32>(column + <usize>k * row) * id);
          store<i8>(block + ((<usize>(k >> 1)) << 4) + ((<usize>j) << 1) + <usize>(k & 1), <i8>q);
        }
      }
    }
  }
}

/** Bytes of one row of x quantized by quantizeRows: K int16 values, then K/32 f32 scales (section 8). */
@inline function q8RowBytes(K: i32): usize {
  return ((<usize>K) << 1) + ((<usize>K) >> 3);
}

/**
 * x [M, K] (f32) quantized per block of 32 along k into xq (as large as x suffices): each row
 * as K int16 values in [-127, 127] and then its K/32 scales (section 8). What matmulQ8 reads;
 * run once per product, before it.
 */
export function quantizeRows(x: usize, xq: usize, M: i32, K: i32): void {
  const rowBytes = q8RowBytes(K);
  const blocks = K / Q8_BLOCK;
  for (let r = 0; r < M; r++) {
    const from = x + ((<usize>(r * K)) << 2);
    const values = xq + <usize>r * rowBytes;
    const scales = values + ((<usize>K) << 1);
    for (let b = 0; b < blocks; b++) {
      const src = from + (<usize>b << 7);
      let m = f32x4.abs(v128.load(src));
      for (let i: usize = 16; i < 128; i += 16) m = f32x4.max(m, f32x4.abs(v128.load(src + i)));
      const amax = max<f32>(max<f32>(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)), max<f32>(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
      const d: f32 = amax / 127;
      const id = f32x4.splat(d != 0 ? 1 / d : 0);
      store<f32>(scales + (<usize>b << 2), d);
      const dst = values + (<usize>b << 6);
      for (let i: usize = 0; i < 4; i++) {
        const lo = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(src + (i << 5)), id)));
        const hi = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(src + (i << 5) + 16), id)));
        v128.store(dst + (i << 4), i16x8.narrow_i32x4_s(lo, hi));
      }
    }
  }
}

/**
 * matmulF32 for q8 panels (section 8), with xt holding x quantized by quantizeRows (for every
 * M, one row included); x itself is not read. K a multiple of 32. The result depends only on
 * the quantized values: the same bits however the panels are divided between calls.
 */
export function matmulQ8(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32, readAhead: i32, oneRowWide: i32, xt: usize, panelFrom: i32, panelTo: i32): void {
  const outRow = (<usize>N) << 2;
  const xRow = q8RowBytes(K);
  const blocks = K / Q8_BLOCK;
  const panelBytes = (<usize>blocks) * Q8_PANEL_BLOCK;
  const group = max<i32>(1, (readAhead != 0 ? READ_AHEAD_GROUP_BYTES : GROUP_BYTES) / <i32>panelBytes);
  for (let first = panelFrom; first < panelTo; first += group) {
    const last = min<i32>(panelTo, first + group);
    if (readAhead != 0) touch(packed + <usize>first * panelBytes, <usize>(last - first) * panelBytes, out + ((<usize>first) << 5));
    let r = 0;
    for (; r + 4 <= M; r += 4) {
      for (let p = first; p < last; p++) tileQ8x4(xt + <usize>r * xRow, xRow, K, packed + <usize>p * panelBytes, blocks, out + <usize>r * outRow + ((<usize>p) << 5), outRow, bias + ((<usize>p) << 5), bias != 0);
    }
    for (; r + 2 <= M; r += 2) {
      for (let p = first; p < last; p++) tileQ8x2(xt + <usize>r * xRow, xRow, K, packed + <usize>p * panelBytes, blocks, out + <usize>r * outRow + ((<usize>p) << 5), outRow, bias + ((<usize>p) << 5), bias != 0);
    }
    if (r < M) {
      for (let p = first; p < last; p++) tileQ8x1(xt + <usize>r * xRow, K, packed + <usize>p * panelBytes, blocks, out + <usize>r * outRow + ((<usize>p) << 5), bias + ((<usize>p) << 5), bias != 0);
    }
  }
}

/** out[0][0..8] = bias + one quantized row (values at xq, scales K int16 later) times one q8 panel. */
@inline function tileQ8x1(xq: usize, K: i32, panel: usize, blocks: i32, out: usize, bias: usize, hasBias: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  const scales = xq + ((<usize>K) << 1);
  let w = panel;
  let xs = xq;
  for (let b = 0; b < blocks; b++) {
    let s0 = i32x4.splat(0), s1 = i32x4.splat(0);
    for (let step: usize = 0; step < 256; step += 64) {
      const p = w + step;
      let xk = v128.load32_splat(xs);
      s0 = i32x4.add(s0, i32x4.dot_i16x8_s(v128.load8x8_s(p), xk));
      s1 = i32x4.add(s1, i32x4.dot_i16x8_s(v128.load8x8_s(p, 8), xk));
      xk = v128.load32_splat(xs, 4);
      s0 = i32x4.add(s0, i32x4.dot_i16x8_s(v128.load8x8_s(p, 16), xk));
      s1 = i32x4.add(s1, i32x4.dot_i16x8_s(v128.load8x8_s(p, 24), xk));
      xk = v128.load32_splat(xs, 8);
      s0 = i32x4.add(s0, i32x4.dot_i16x8_s(v128.load8x8_s(p, 32), xk));
      s1 = i32x4.add(s1, i32x4.dot_i16x8_s(v128.load8x8_s(p, 40), xk));
      xk = v128.load32_splat(xs, 12);
      s0 = i32x4.add(s0, i32x4.dot_i16x8_s(v128.load8x8_s(p, 48), xk));
      s1 = i32x4.add(s1, i32x4.dot_i16x8_s(v128.load8x8_s(p, 56), xk));
      xs += 16;
    }
    const d = v128.load32_splat(scales + (<usize>b << 2));
    a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(s0), f32x4.mul(v128.load(w, 256), d)));
    a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(s1), f32x4.mul(v128.load(w, 272), d)));
    w += Q8_PANEL_BLOCK;
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
}

/** tileQ8x1 for two rows (xRow bytes apart in xq, outRow apart in out): each widened pair of steps feeds both. */
@inline function tileQ8x2(xq: usize, xRow: usize, K: i32, panel: usize, blocks: i32, out: usize, outRow: usize, bias: usize, hasBias: bool): void {
  let a0 = bias0(bias, hasBias), a1 = bias1(bias, hasBias);
  let b0 = a0, b1 = a1;
  const scales = xq + ((<usize>K) << 1);
  let w = panel;
  let xs = xq;
  for (let b = 0; b < blocks; b++) {
    let s0 = i32x4.splat(0), s1 = i32x4.splat(0), t0 = i32x4.splat(0), t1 = i32x4.splat(0);
    for (let step: usize = 0; step < 256; step += 16) {
      const lo = v128.load8x8_s(w + step);
      const hi = v128.load8x8_s(w + step, 8);
      let xk = v128.load32_splat(xs);
      s0 = i32x4.add(s0, i32x4.dot_i16x8_s(lo, xk));
      s1 = i32x4.add(s1, i32x4.dot_i16x8_s(hi, xk));
      xk = v128.load32_splat(xs + xRow);
      t0 = i32x4.add(t0, i32x4.dot_i16x8_s(lo, xk));
      t1 = i32x4.add(t1, i32x4.dot_i16x8_s(hi, xk));
      xs += 4;
    }
    const w0 = v128.load(w, 256);
    const w1 = v128.load(w, 272);
    let d = v128.load32_splat(scales + (<usize>b << 2));
    a0 = f32x4.add(a0, f32x4.mul(f32x4.convert_i32x4_s(s0), f32x4.mul(w0, d)));
    a1 = f32x4.add(a1, f32x4.mul(f32x4.convert_i32x4_s(s1), f32x4.mul(w1, d)));
    d = v128.load32_splat(scales + xRow + (<usize>b << 2));
    b0 = f32x4.add(b0, f32x4.mul(f32x4.convert_i32x4_s(t0), f32x4.mul(w0, d)));
    b1 = f32x4.add(b1, f32x4.mul(f32x4.convert_i32x4_s(t1), f32x4.mul(w1, d)));
    w += Q8_PANEL_BLOCK;
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
}

/** The f32 sums of one row's 8 columns at out, plus one block's integer sums (s0: columns 0-3, s1: 4-7) times their scales. */
@inline function addBlock(out: usize, s0: v128, s1: v128, w0: v128, w1: v128, d: v128): void {
  v128.store(out, f32x4.add(v128.load(out), f32x4.mul(f32x4.convert_i32x4_s(s0), f32x4.mul(w0, d))));
  v128.store(out, f32x4.add(v128.load(out, 16), f32x4.mul(f32x4.convert_i32x4_s(s1), f32x4.mul(w1, d))), 16);
}

/** tileQ8x2 for four rows, its f32 sums kept in out between blocks (section 8). */
@inline function tileQ8x4(xq: usize, xRow: usize, K: i32, panel: usize, blocks: i32, out: usize, outRow: usize, bias: usize, hasBias: bool): void {
  const start0 = bias0(bias, hasBias), start1 = bias1(bias, hasBias);
  for (let i: usize = 0; i < 4; i++) {
    v128.store(out + i * outRow, start0);
    v128.store(out + i * outRow, start1, 16);
  }
  const scales = xq + ((<usize>K) << 1);
  let w = panel;
  let xs = xq;
  for (let b = 0; b < blocks; b++) {
    let a0 = i32x4.splat(0), a1 = i32x4.splat(0), b0 = i32x4.splat(0), b1 = i32x4.splat(0);
    let c0 = i32x4.splat(0), c1 = i32x4.splat(0), d0 = i32x4.splat(0), d1 = i32x4.splat(0);
    for (let step: usize = 0; step < 256; step += 16) {
      const lo = v128.load8x8_s(w + step);
      const hi = v128.load8x8_s(w + step, 8);
      let xk = v128.load32_splat(xs);
      a0 = i32x4.add(a0, i32x4.dot_i16x8_s(lo, xk));
      a1 = i32x4.add(a1, i32x4.dot_i16x8_s(hi, xk));
      xk = v128.load32_splat(xs + xRow);
      b0 = i32x4.add(b0, i32x4.dot_i16x8_s(lo, xk));
      b1 = i32x4.add(b1, i32x4.dot_i16x8_s(hi, xk));
      xk = v128.load32_splat(xs + 2 * xRow);
      c0 = i32x4.add(c0, i32x4.dot_i16x8_s(lo, xk));
      c1 = i32x4.add(c1, i32x4.dot_i16x8_s(hi, xk));
      xk = v128.load32_splat(xs + 3 * xRow);
      d0 = i32x4.add(d0, i32x4.dot_i16x8_s(lo, xk));
      d1 = i32x4.add(d1, i32x4.dot_i16x8_s(hi, xk));
      xs += 4;
    }
    const w0 = v128.load(w, 256);
    const w1 = v128.load(w, 272);
    const scale = scales + (<usize>b << 2);
    addBlock(out, a0, a1, w0, w1, v128.load32_splat(scale));
    addBlock(out + outRow, b0, b1, w0, w1, v128.load32_splat(scale + xRow));
    addBlock(out + 2 * outRow, c0, c1, w0, w1, v128.load32_splat(scale + 2 * xRow));
    addBlock(out + 3 * outRow, d0, d1, w0, w1, v128.load32_splat(scale + 3 * xRow));
    w += Q8_PANEL_BLOCK;
  }
}

/**
 * Columns [from, from + width) of x [M, N] into out [M, width]: one part of a fused
 * projection's output (q|k|v, gate|up) as a tensor of its own. tfjs's own split copies
 * these in JavaScript, about 70 us for a single row of 3072 floats.
 */
export function copyColumns(x: usize, out: usize, M: i32, N: i32, from: i32, width: i32): void {
  const bytes = (<usize>width) << 2;
  for (let r = 0; r < M; r++) {
    const src = x + ((<usize>(r * N + from)) << 2);
    const dst = out + <usize>r * bytes;
    let i: usize = 0;
    for (; i + 16 <= bytes; i += 16) v128.store(dst + i, v128.load(src + i));
    for (; i < bytes; i += 4) store<f32>(dst + i, load<f32>(src + i));
  }
}
