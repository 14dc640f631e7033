/** Positions whose rows a StepRopeTables keeps: 8,192 positions of heads of 128 are 8 MB. */
export const KEPT_POSITIONS = 8192;

/**
 * The RoPE tables an encoded decoding step writes (decode-step.webgpu.ts): for each token, cos
 * and sin of its position at each inverse frequency, for q (times the attention's scale) then
 * for k, [tokens, 4, D/2], rounded as Rope.tables rounds them (the angle a float32 product). A
 * position's row is the same at every step, so each one below KEPT_POSITIONS is computed once
 * and kept, the kept rows growing by doubling up to the highest position asked for: a prompt's
 * chunk of 256 tokens then copies 256 rows (one copy where its positions run on) rather than
 * computing 2 D sines and cosines a token.
 */
export class StepRopeTables {
  /** Kept rows [positions, 4, D/2], the first `known` of them written. */
  private rows = new Float32Array(0);
  private known = 0;
  private readonly half: number;
  private readonly row: number;

  constructor(
    private readonly invFreq: Float32Array,
    /** The attention's scale, folded into q's cos and sin. */
    private readonly scale: number,
  ) {
    this.half = invFreq.length;
    this.row = 4 * this.half;
  }

  /** The tables of `positions`, in their order. */
  tables(positions: readonly number[]): Float32Array {
    const out = new Float32Array(positions.length * this.row);
    const highest = positions.reduce((m, p) => Math.max(m, p), -1);
    this.keepUpTo(Math.min(highest, KEPT_POSITIONS - 1));
    for (let n = 0; n < positions.length; ) {
      const p = positions[n];
      if (p >= KEPT_POSITIONS) {
        this.writeRow(out, n * this.row, p);
        n++;
        continue;
      }
      // A run of consecutive kept positions is one copy.
      let end = n + 1;
      while (end < positions.length && positions[end] === p + end - n && positions[end] < KEPT_POSITIONS) end++;
      out.set(this.rows.subarray(p * this.row, (p + end - n) * this.row), n * this.row);
      n = end;
    }
    return out;
  }

  /** Computes and keeps the rows of every position up to `last`. */
  private keepUpTo(last: number): void {
    if (last < this.known) return;
    if ((last + 1) * this.row > this.rows.length) {
      const grown = new Float32Array(Math.min(KEPT_POSITIONS, Math.max(2 * this.rows.length / this.row, last + 1, 64)) * this.row);
      grown.set(this.rows.subarray(0, this.known * this.row));
      this.rows = grown;
    }
    for (let p = this.known; p <= last; p++) this.writeRow(this.rows, p * this.row, p);
    this.known = last + 1;
  }

  /** Position p's row at `at` of `out`. */
  private writeRow(out: Float32Array, at: number, p: number): void {
    const half = this.half;
    for (let j = 0; j < half; j++) {
      const angle = Math.fround(p * this.invFreq[j]);
      const cos = Math.fround(Math.cos(angle));
      const sin = Math.fround(Math.sin(angle));
      out[at + j] = cos * this.scale;
      out[at + half + j] = sin * this.scale;
      out[at + 2 * half + j] = cos;
      out[at + 3 * half + j] = sin;
    }
  }
}
