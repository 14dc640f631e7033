/**
 * The attention kernel's exports (libs/engine/assembly/attention.ts), in both its builds: on
 * tfjs-wasm's heap (ATTENTION_WASM: decode-attention.ts, prompt-attention.ts) and on the
 * matmul threads' shared memory (ATTENTION_SHARED_WASM: matmul-threads.ts). Every argument
 * before the shapes is a byte offset in the memory the module runs on.
 */
export interface AttentionKernels {
  /** One new token per sequence: out = softmax(q k^T + mask) v, with scratch [G, S] (`weights`). */
  attention(q: number, k: number, v: number, mask: number, weights: number, out: number, B: number, KV: number, G: number, T: number, S: number, D: number, maskRows: number, stride: number): void;
  /** kT [heads, D, S8] from k [heads, stride, D]: the keys as promptAttention reads them. */
  transposeKeys(k: number, kT: number, heads: number, S: number, stride: number, D: number): void;
  /** How many tiles of 4 query rows promptAttention numbers for these shapes (sequence by sequence, KV head by KV head). */
  promptAttentionTiles(B: number, KV: number, G: number, T: number): number;
  /** T new tokens per sequence, tiles [tileFrom, tileTo) of 4 query rows, with thread's block of scratch ([4, S8] floats each). */
  promptAttention(
    q: number,
    kT: number,
    v: number,
    mask: number,
    scratch: number,
    out: number,
    B: number,
    KV: number,
    G: number,
    T: number,
    S: number,
    D: number,
    maskRows: number,
    stride: number,
    tileFrom: number,
    tileTo: number,
    thread: number,
  ): void;
  /** promptAttention's gradient for KV heads [headFrom, headTo), with thread's block of scratch (attentionBackwardScratch floats each). */
  attentionBackward(
    q: number,
    k: number,
    v: number,
    mask: number,
    dO: number,
    dq: number,
    dk: number,
    dv: number,
    scratch: number,
    B: number,
    KV: number,
    G: number,
    T: number,
    S: number,
    D: number,
    maskRows: number,
    headFrom: number,
    headTo: number,
    thread: number,
  ): void;
  /** Floats of scratch attentionBackward takes per thread for S columns and D dimensions. */
  attentionBackwardScratch(S: number, D: number): number;
}
