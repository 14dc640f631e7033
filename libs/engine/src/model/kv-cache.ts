import * as tf from '@tensorflow/tfjs-core';
import { cacheRows, writeCacheRows } from '../kernels/cache-rows.webgpu';
import { decodeAttentionKernelAvailable } from '../kernels/decode-attention';
import { heapView, WasmBackendInternals } from '../kernels/wasm-heap';
import { zerosOnGpu } from '../kernels/webgpu-program';

/** Masked scores get this instead of -Infinity so an all-masked row stays finite. */
export const MASKED = -1e9;

/**
 * Spare columns a layer gets when an append does not fit (in-place mode): a decoding batch
 * copies its cache once per this many steps instead of at every step. 128 columns of SmolLM2-
 * 135M's 30 layers are 5.9 MB per row.
 */
export const SPARE_COLUMNS = 128;

/**
 * Keys and values of a batch of sequences ("rows"), per layer [rows, kvHeads, width, headDim].
 *
 * Rows have different lengths, so columns are not positions: RoPE is applied before caching,
 * which makes the column order irrelevant to attention and lets every row grow by one column
 * per step together. Each row records which columns are its own; the rest are padding
 * (from joining a wider or narrower batch) and masked out. compact() squeezes the padding away.
 *
 * Appending by concatenation copies every layer's keys and values at every step: at 1,900
 * tokens of SmolLM2-135M that is 88 MB read and written per token. Where the attention kernels
 * run on tfjs-wasm's heap (in-place mode), a layer instead holds spare columns after its
 * `width` ([rows, kvHeads, width + spare, headDim]) and an append that fits writes the new
 * columns into them where the tensor lives; only one that does not fit copies the layer, into
 * a tensor with SPARE_COLUMNS more. The attention kernels read the first `width` columns of
 * each head (the mask's), so spare columns need no slicing. A tensor with spare columns is
 * this cache's alone: prefix() copies it, merge() copies or moves it, replaceRow() writes a
 * joining row into it, and a tensor shared with another cache (prefix() of a whole row) has
 * none, so its next append copies it first.
 */
export class KVCache {
  private keys: (tf.Tensor4D | null)[];
  private values: (tf.Tensor4D | null)[];
  /** Per row, 1 where a column holds one of its tokens. */
  private valid: Uint8Array[] = [];
  /** Per row, the position of its next token. */
  private positions: number[] = [];
  private columns = 0;
  /** Whether appends write into spare columns in place (see the class comment). */
  readonly inPlace: boolean;

  constructor(
    readonly numLayers: number,
    options: { inPlace?: boolean } = {},
  ) {
    this.keys = new Array(numLayers).fill(null);
    this.values = new Array(numLayers).fill(null);
    this.inPlace = options.inPlace ?? decodeAttentionKernelAvailable();
  }

  get rows(): number {
    return this.positions.length;
  }

  get width(): number {
    return this.columns;
  }

  /** Tokens held by each row (== its next position). */
  lengths(): number[] {
    return [...this.positions];
  }

  /** Adds an empty row (a sequence with no tokens yet) and returns its index. */
  addEmptyRow(): number {
    if (this.columns > 0) throw new Error('addEmptyRow on a non-empty cache: prefill in a fresh cache and merge() it');
    this.positions.push(0);
    this.valid.push(new Uint8Array(0));
    return this.positions.length - 1;
  }

  /**
   * Starts a forward step of T new tokens for every row: returns their positions and the
   * additive attention mask [rows, 1, T, width + T] (own columns, then causal over the new ones).
   */
  beginStep(T: number): { positions: number[][]; mask: tf.Tensor4D } {
    const positions = this.positions.map((p) => Array.from({ length: T }, (_, t) => p + t));
    return { positions, mask: this.maskTensor(T) };
  }

  /**
   * beginStep(T)'s mask for layers that attend within a sliding window of `window` positions
   * (model/llama.ts's StepContext.sliding): the cache keeps every column, the mask hides the
   * ones that fell out of the window.
   */
  windowMask(T: number, window: number): tf.Tensor4D {
    return this.maskTensor(T, window);
  }

  private maskTensor(T: number, window?: number): tf.Tensor4D {
    return tf.tensor4d(this.stepMask(T, window), [this.rows, 1, T, this.columns + T]);
  }

  /**
   * The values of beginStep(T)'s mask, [rows, T, width + T]; with a `window`, the token at
   * position p sees only positions p - window < k <= p. A row's own columns hold its positions
   * 0, 1, 2... in column order (appends, merges, compaction and prefixes all keep that order).
   */
  stepMask(T = 1, window = Infinity): Float32Array {
    const W = this.columns;
    const total = W + T;
    // Zeros (visible) to start with, the hidden spans then filled or copied in whole: a decoding
    // step's row sees nearly all of its columns (a batch of 128 rows of 2,048 columns is 1 MB a
    // step), and a prompt's chunk of 256 tokens writes 256 of its rows.
    const mask = new Float32Array(this.rows * T * total);
    // A row's cached columns as a token that sees all its positions sees them, and within a window the column of each position.
    const hidden = new Float32Array(W);
    const windowed = window !== Infinity;
    this.valid.forEach((rowValid, b) => {
      const cached = this.positions[b];
      const columnOf: number[] = [];
      for (let c = 0; c < W; c++) {
        hidden[c] = rowValid[c] ? 0 : MASKED;
        if (windowed && rowValid[c]) columnOf.push(c);
      }
      for (let t = 0; t < T; t++) {
        const base = (b * T + t) * total;
        // The first position this token sees; with none before the row's first, every token of the row is in its window.
        const first = cached + t - window + 1;
        mask.set(hidden, base);
        // Every column before the first position's is hidden (an unused one, or an earlier position).
        if (first > 0) mask.fill(MASKED, base, base + (first < columnOf.length ? columnOf[first] : W));
        // The step's own tokens: those up to t, inside the window.
        mask.fill(MASKED, base + W, base + W + Math.max(0, Math.min(t - window + 1, T)));
        mask.fill(MASKED, base + W + t + 1, base + total);
      }
    });
    return mask;
  }

  /**
   * Appends the step's keys/values [rows, kvHeads, T, headDim] to a layer; returns the full
   * ones, whose first width + T columns count (in-place mode may leave spare ones after them).
   */
  append(layer: number, k: tf.Tensor4D, v: tf.Tensor4D): { k: tf.Tensor4D; v: tf.Tensor4D } {
    const oldK = this.keys[layer];
    const oldV = this.values[layer];
    if (!oldK || !oldV) {
      this.keys[layer] = tf.keep(k);
      this.values[layer] = tf.keep(v);
      return { k, v };
    }
    const T = k.shape[2];
    const target = this.appendTarget(layer, T);
    if (target) {
      copyBlocksOnHeap(target.k, 0, target.column, k, T);
      copyBlocksOnHeap(target.v, 0, target.column, v, T);
      return { k: target.k, v: target.v };
    }
    const grow = (old: tf.Tensor4D, added: tf.Tensor4D): tf.Tensor4D =>
      tf.tidy(() => {
        const parts = [ownColumns(old, this.columns), added];
        if (this.inPlace) parts.push(tf.zeros([added.shape[0], added.shape[1], SPARE_COLUMNS, added.shape[3]]));
        return tf.concat(parts, 2);
      });
    this.replace(layer, grow(oldK, k), grow(oldV, v));
    return { k: this.keys[layer] as tf.Tensor4D, v: this.values[layer] as tf.Tensor4D };
  }

  /**
   * Where a step of T tokens writes a layer's new keys and values in place: the layer's tensors
   * and the first column (the cache's width), or null where they must be concatenated instead
   * (not in-place mode, nothing cached yet, too few spare columns left, or a tensor shared with
   * another cache). A caller other than append() writes those columns of every row itself;
   * endStep(T) then counts them.
   */
  appendTarget(layer: number, T = 1): { k: tf.Tensor4D; v: tf.Tensor4D; column: number } | null {
    const k = this.keys[layer];
    const v = this.values[layer];
    if (!this.inPlace || !k || !v || this.columns + T > k.shape[2]) return null;
    return { k, v, column: this.columns };
  }

  /**
   * Where a step of T tokens writes every layer's new keys and values in place, on any backend:
   * appendTarget's, after giving each layer without room (or holding a tensor that may be shared)
   * a copy with SPARE_COLUMNS spare columns; a layer with nothing cached yet gets zeros of
   * `shape` with as many. The caller writes the columns of every row and then calls endStep(T).
   */
  reserve(T: number, shape: { kvHeads: number; headDim: number }): { k: tf.Tensor4D; v: tf.Tensor4D; column: number }[] {
    const targets: { k: tf.Tensor4D; v: tf.Tensor4D; column: number }[] = [];
    for (let layer = 0; layer < this.numLayers; layer++) {
      const k = this.keys[layer];
      const v = this.values[layer];
      if (!k || !v) {
        const empty = () => zerosWhereKept([this.rows, shape.kvHeads, T + SPARE_COLUMNS, shape.headDim]);
        this.replace(layer, empty(), empty());
      } else if (this.columns + T > k.shape[2]) {
        const grow = (old: tf.Tensor4D) =>
          tf.tidy(() => {
            const [rows, heads, , d] = old.shape;
            return tf.concat([ownColumns(old, this.columns), zerosWhereKept([rows, heads, T + SPARE_COLUMNS, d])], 2) as tf.Tensor4D;
          });
        this.replace(layer, grow(k), grow(v));
      }
      targets.push({ k: this.keys[layer] as tf.Tensor4D, v: this.values[layer] as tf.Tensor4D, column: this.columns });
    }
    return targets;
  }

  /** Commits a step begun with beginStep(T), after every layer has appended. */
  endStep(T: number): void {
    this.columns += T;
    for (let b = 0; b < this.rows; b++) {
      const grown = new Uint8Array(this.columns);
      grown.set(this.valid[b]);
      grown.fill(1, this.columns - T);
      this.valid[b] = grown;
      this.positions[b] += T;
    }
  }

  /**
   * Moves the rows of `other` to the end of this cache (other is emptied). The merged tensors
   * are made with SPARE_COLUMNS spare columns, so that the next step writes its column in place
   * (reserve, in-place mode) rather than copying the whole cache again to make room; an append
   * that concatenates drops them.
   */
  merge(other: KVCache): void {
    if (other.numLayers !== this.numLayers) throw new Error('caches of different models');
    if (other.rows === 0) return;
    if (this.rows === 0) {
      this.adopt(other);
      return;
    }
    const width = Math.max(this.columns, other.columns);
    // One WGSL dispatch a tensor on webgpu (kernels/cache-rows.webgpu.ts), tfjs's ops elsewhere.
    const rows = (mine: tf.Tensor4D | null, theirs: tf.Tensor4D | null) =>
      (mine && theirs && cacheRows(mine, this.columns, theirs, other.columns, width, SPARE_COLUMNS)) ??
      tf.tidy(() => tf.concat([padColumns(mine, this.columns, width, SPARE_COLUMNS), padColumns(theirs, other.columns, width, SPARE_COLUMNS)], 0));
    for (let l = 0; l < this.numLayers; l++) this.replace(l, rows(this.keys[l], other.keys[l]), rows(this.values[l], other.values[l]));
    this.valid = [...this.valid.map((m) => padMask(m, width)), ...other.valid.map((m) => padMask(m, width))];
    this.positions = [...this.positions, ...other.positions];
    this.columns = width;
    other.clear();
    this.compactIfSparse();
  }

  /**
   * A new one-row cache holding the first `length` tokens of this one-row cache, e.g. a
   * cached prompt's shared beginning. Only a cache that was prefilled alone has columns that
   * are its positions, in order (no padding): that is the only kind this accepts. The tensors
   * are shared, not copied, when the whole row is taken and they hold no spare columns.
   */
  prefix(length: number): KVCache {
    if (this.rows !== 1 || this.positions[0] !== this.columns) throw new Error('prefix() needs a one-row cache without padding');
    if (!(length >= 1 && length <= this.columns)) throw new Error(`prefix of ${length} tokens out of [1, ${this.columns}]`);
    const out = new KVCache(this.numLayers);
    const take = (x: tf.Tensor4D | null) => {
      if (!x) throw new Error('cache layer missing');
      return length === x.shape[2] ? tf.clone(x) : tf.slice(x, [0, 0, 0, 0], [1, -1, length, -1]);
    };
    for (let l = 0; l < this.numLayers; l++) out.replace(l, take(this.keys[l]), take(this.values[l]));
    out.valid = [new Uint8Array(length).fill(1)];
    out.positions = [length];
    out.columns = length;
    return out;
  }

  /** Bytes held by the keys and values of every layer. */
  get bytes(): number {
    let n = 0;
    for (let l = 0; l < this.numLayers; l++) n += (this.keys[l]?.size ?? 0) + (this.values[l]?.size ?? 0);
    return n * 4;
  }

  /** Drops a row; the rows after it move up by one. */
  removeRow(row: number): void {
    this.removeRows([row]);
  }

  /** Drops `rows` (one copy of each tensor for all of them); the rows after each move up. */
  removeRows(rows: readonly number[]): void {
    for (const row of rows) if (!(row >= 0 && row < this.rows)) throw new Error(`no row ${row}`);
    const gone = new Set(rows);
    if (gone.size === 0) return;
    if (gone.size === this.rows) {
      this.clear();
      return;
    }
    const keep = Array.from({ length: this.rows }, (_, i) => i).filter((i) => !gone.has(i));
    const index = tf.tensor1d(keep, 'int32');
    for (let l = 0; l < this.numLayers; l++) {
      const k = this.keys[l] ? tf.gather(this.keys[l] as tf.Tensor4D, index, 0) : null;
      const v = this.values[l] ? tf.gather(this.values[l] as tf.Tensor4D, index, 0) : null;
      this.replace(l, k, v);
    }
    index.dispose();
    this.valid = keep.map((i) => this.valid[i]);
    this.positions = keep.map((i) => this.positions[i]);
    this.compactIfSparse();
  }

  /**
   * Puts the one row of `other` in place of row `row` (a sequence that left), its own columns
   * right-aligned in the first `width` columns as merge() lays them and the rest of the row
   * masked; other is emptied. Where this cache owns its tensors (they have spare columns) and
   * the backend writes them where they are (webgpu's fused kernels, tfjs-wasm's heap in
   * in-place mode), only that row's values are written: the tensors, and on webgpu the bind
   * groups over them, stay. Elsewhere each tensor is made again around the row. False, and
   * nothing changed, where other is wider than this cache: the caller merges it instead.
   */
  replaceRow(row: number, other: KVCache): boolean {
    if (other.numLayers !== this.numLayers) throw new Error('caches of different models');
    if (other.rows !== 1) throw new Error(`replaceRow() takes a one-row cache, not ${other.rows} rows`);
    if (!(row >= 0 && row < this.rows)) throw new Error(`no row ${row}`);
    if (other.columns > this.columns) return false;
    const L = other.columns;
    const mine = [...this.keys, ...this.values];
    const theirs = [...other.keys, ...other.values];
    if (mine.some((t) => !t) || theirs.some((t) => !t)) throw new Error('cache layer missing');
    // Tensors with spare columns are this cache's alone (class comment): written where they are.
    const owned = (mine as tf.Tensor4D[]).every((t) => t.shape[2] > this.columns);
    if (owned && this.inPlace && tf.getBackend() === 'wasm') {
      // The prompt's L columns right-aligned in the row's first `columns`, as merge() aligns a row.
      mine.forEach((t, i) => copyBlocksOnHeap(t as tf.Tensor4D, row * (t as tf.Tensor4D).shape[1], this.columns - L, theirs[i] as tf.Tensor4D, L));
    } else if (!owned || !writeCacheRows(mine as tf.Tensor4D[], row, theirs as tf.Tensor4D[], L, this.columns)) {
      const around = (x: tf.Tensor4D, joining: tf.Tensor4D) =>
        tf.tidy(() => {
          const parts: tf.Tensor4D[] = [];
          if (row > 0) parts.push(tf.slice(x, [0, 0, 0, 0], [row, -1, -1, -1]));
          parts.push(padColumns(joining, L, this.columns, x.shape[2] - this.columns));
          if (row < x.shape[0] - 1) parts.push(tf.slice(x, [row + 1, 0, 0, 0], [-1, -1, -1, -1]));
          return tf.concat(parts, 0);
        });
      for (let l = 0; l < this.numLayers; l++) {
        this.replace(l, around(this.keys[l] as tf.Tensor4D, other.keys[l] as tf.Tensor4D), around(this.values[l] as tf.Tensor4D, other.values[l] as tf.Tensor4D));
      }
    }
    this.valid[row] = padMask(other.valid[0], this.columns);
    this.positions[row] = other.positions[0];
    other.clear();
    this.compactIfSparse();
    return true;
  }

  /** Gathers every row's own columns to the right, dropping padding columns no row uses. */
  compact(): void {
    const lengths = this.valid.map((m) => m.reduce((s, x) => s + x, 0));
    const width = Math.max(0, ...lengths);
    if (width === this.columns) return;
    const indices = new Int32Array(this.rows * width);
    const valid: Uint8Array[] = [];
    this.valid.forEach((m, b) => {
      const own: number[] = [];
      m.forEach((x, c) => x && own.push(c));
      const pad = width - own.length;
      for (let c = 0; c < width; c++) indices[b * width + c] = c < pad ? 0 : own[c - pad];
      const mask = new Uint8Array(width);
      mask.fill(1, pad);
      valid.push(mask);
    });
    const index = tf.tensor2d(indices, [this.rows, width], 'int32');
    for (let l = 0; l < this.numLayers; l++) {
      const k = this.keys[l] ? tf.gather(this.keys[l] as tf.Tensor4D, index, 2, 1) : null;
      const v = this.values[l] ? tf.gather(this.values[l] as tf.Tensor4D, index, 2, 1) : null;
      this.replace(l, k, v);
    }
    index.dispose();
    this.valid = valid;
    this.columns = width;
  }

  clear(): void {
    for (let l = 0; l < this.numLayers; l++) this.replace(l, null, null);
    this.valid = [];
    this.positions = [];
    this.columns = 0;
  }

  dispose(): void {
    this.clear();
  }

  /** Padding worth a copy of the cache: more than a quarter of the width and 32 columns. */
  private compactIfSparse(): void {
    const longest = Math.max(0, ...this.valid.map((m) => m.reduce((s, x) => s + x, 0)));
    const waste = this.columns - longest;
    if (waste > 32 && waste > this.columns / 4) this.compact();
  }

  private adopt(other: KVCache): void {
    this.clear();
    this.keys = other.keys;
    this.values = other.values;
    this.valid = other.valid;
    this.positions = other.positions;
    this.columns = other.columns;
    other.keys = new Array(this.numLayers).fill(null);
    other.values = new Array(this.numLayers).fill(null);
    other.valid = [];
    other.positions = [];
    other.columns = 0;
  }

  private replace(layer: number, k: tf.Tensor4D | null, v: tf.Tensor4D | null): void {
    this.keys[layer]?.dispose();
    this.values[layer]?.dispose();
    this.keys[layer] = k ? tf.keep(k) : null;
    this.values[layer] = v ? tf.keep(v) : null;
  }
}

/** The first `columns` columns of keys or values [rows, heads, w, d]: x itself where it has no spare ones. */
export function ownColumns(x: tf.Tensor4D, columns: number): tf.Tensor4D {
  return x.shape[2] === columns ? x : tf.slice(x, [0, 0, 0, 0], [-1, -1, columns, -1]);
}

/** The first `columns` columns of [rows, heads, w, d], left-padded with zero columns up to `width`, and `spare` zero columns after them. */
function padColumns(x: tf.Tensor4D | null, columns: number, width: number, spare: number): tf.Tensor4D {
  if (!x) throw new Error('cache layer missing');
  const own = ownColumns(x, columns);
  return width === columns && spare === 0
    ? own.clone()
    : tf.pad(own, [
        [0, 0],
        [0, 0],
        [width - columns, spare],
        [0, 0],
      ]);
}

/**
 * Copies the first `columns` columns of each [S, d] block of `source` [n, heads, S, d] (its
 * n x heads blocks in order) into `target` [rows, heads, capacity, d] at column `at` of its
 * blocks from `firstBlock` on, where tfjs-wasm keeps both tensors' data: one copy of columns x d
 * floats a block. Only for a target no other tensor holds (KVCache's in-place mode): a step's
 * new columns into every row (firstBlock 0), or a joining prompt's into one row (replaceRow).
 */
function copyBlocksOnHeap(target: tf.Tensor4D, firstBlock: number, at: number, source: tf.Tensor4D, columns: number): void {
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const [, , capacity, d] = target.shape;
  const [n, heads, S] = source.shape;
  const to = heapView(wasm, target);
  const from = heapView(wasm, source);
  for (let b = 0; b < n * heads; b++) to.set(from.subarray(b * S * d, (b * S + columns) * d), ((firstBlock + b) * capacity + at) * d);
}

function padMask(m: Uint8Array, width: number): Uint8Array {
  const out = new Uint8Array(width);
  out.set(m, width - m.length);
  return out;
}

/**
 * Zeros made where the backend keeps its data, not uploaded from the host: on webgpu a buffer
 * cleared by the command encoder (zerosOnGpu), elsewhere tf.fill.
 */
function zerosWhereKept(shape: [number, number, number, number]): tf.Tensor4D {
  return (zerosOnGpu(shape) ?? tf.fill(shape, 0)) as tf.Tensor4D;
}
