/**
 * WGSL that the tiled attention programs share: the prefill's in the encoded decoding step
 * (decode-step.wgsl.ts, promptAttentionShader) and training's (prompt-attention.webgpu.ts).
 */

/**
 * FlashAttention's online softmax for query `tid` of a tile, over the scores of a block of TK
 * keys in workgroup memory `ps` [queries, TK] (the `tile` first of them real): the query's
 * running maximum and sum (`runningMax`, `runningSum`) brought up to date, the block's weights
 * exp(score - max) left in ps, and `scale`, how much the running sums shrink, for the caller.
 */
export const ONLINE_SOFTMAX = `var newMax = runningMax[tid];
      for (var c = 0u; c < tile; c++) { newMax = max(newMax, ps[tid * TK + c]); }
      var sum = 0.0;
      for (var c = 0u; c < TK; c++) {
        let weight = select(0.0, exp(ps[tid * TK + c] - newMax), c < tile);
        ps[tid * TK + c] = weight;
        sum += weight;
      }
      let scale = exp(runningMax[tid] - newMax);
      runningSum[tid] = runningSum[tid] * scale + sum;
      runningMax[tid] = newMax;`;
