import * as tf from '@tensorflow/tfjs-core';
import { MAX_HEAD_DIM, WORKGROUP, WORKGROUP_REDUCTIONS_WGSL } from './decode-step.wgsl';
import { runProgram, WgslProgram, WORKGROUP_INDEX } from './webgpu-program';

/**
 * Attention for a decoding step as one WGSL dispatch per layer on webgpu, every head of every
 * sequence at once: softmax(q k^T + mask) v with q [B*KV, G, D], k and v [B, KV, S, D] (the KV
 * cache), mask [B, 1, 1, S]. One workgroup per query head (B*KV*G of them); the G heads of a
 * KV group read the same k and v rows (grouped-query attention without tiling K and V).
 *
 * The keys are taken in tiles of one per thread: each thread scores its key, the workgroup
 * reduces the tile's maximum and sum, and the output, one dimension per thread, is rescaled
 * by exp(old max - new max) and accumulates the tile's weighted values (an online softmax, as
 * FlashAttention's), so the [S] scores never leave the workgroup and any S fits. The generic
 * path takes a batched matMul, an add, a softmax and a second batched matMul, with the
 * [B*KV, G, S] scores and probabilities written out in between.
 */
export const DECODE_ATTENTION_KERNEL = 'TrainyardDecodeAttention';
/** Largest head dimension: each thread keeps MAX_HEAD_DIM / WORKGROUP output dimensions in registers (shared with the encoded step's attention). */
export { MAX_HEAD_DIM };
const DIMS_PER_THREAD = MAX_HEAD_DIM / WORKGROUP;

function program(groups: number, G: number, D: number): WgslProgram {
  return {
    variableNames: ['q', 'k', 'v', 'mask'],
    outputShape: [groups, G, D],
    shaderKey: 'trainyardDecodeAttention',
    dispatchLayout: { x: [0, 1, 2] },
    dispatch: [groups * G, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    getUserCode: () => `
      var<workgroup> query : array<f32, ${MAX_HEAD_DIM}>;
      var<workgroup> weights : array<f32, ${WORKGROUP}>;
      ${WORKGROUP_REDUCTIONS_WGSL}

      fn main(index : i32) {
        let G = uniforms.qShape[1];
        let D = uniforms.qShape[2];
        let valid = ${WORKGROUP_INDEX} < uniforms.qShape[0] * G;
        let head = min(${WORKGROUP_INDEX}, uniforms.qShape[0] * G - 1);
        let KV = uniforms.kShape[1];
        let S = uniforms.kShape[2];
        // Row of q's batch (sequence x KV head), whose k and v rows are contiguous, [S, D].
        let group = head / G;
        let keys = group * S * D;
        let maskRow = (group / KV) * S;
        let tid = i32(localId.x);

        for (var d = tid; d < D; d += ${WORKGROUP}) { query[d] = q[head * D + d]; }
        workgroupBarrier();

        var runningMax = -3.402823e+38;
        var runningSum = 0.0;
        var acc : array<f32, ${DIMS_PER_THREAD}>;
        for (var start = 0; start < S; start += ${WORKGROUP}) {
          let s = start + tid;
          var score = -3.402823e+38;
          if (s < S) {
            var dot = 0.0;
            for (var d = 0; d < D; d++) { dot += query[d] * k[keys + s * D + d]; }
            score = dot + mask[maskRow + s];
          }
          let newMax = max(runningMax, reduceMax(u32(tid), score));
          let weight = select(0.0, exp(score - newMax), s < S);
          weights[tid] = weight;
          let rescale = exp(runningMax - newMax);
          runningSum = runningSum * rescale + reduceSum(u32(tid), weight);
          runningMax = newMax;
          let tile = min(${WORKGROUP}, S - start);
          for (var i = 0; i < ${DIMS_PER_THREAD}; i++) {
            let d = tid + i * ${WORKGROUP};
            if (d < D) {
              var sum = acc[i] * rescale;
              for (var t = 0; t < tile; t++) { sum += weights[t] * v[keys + (start + t) * D + d]; }
              acc[i] = sum;
            }
          }
          workgroupBarrier();
        }
        for (var i = 0; i < ${DIMS_PER_THREAD}; i++) {
          let d = tid + i * ${WORKGROUP};
          if (valid && d < D) { setOutputAtIndex(head * D + d, acc[i] / runningSum); }
        }
      }`,
  };
}

tf.registerKernel({
  kernelName: DECODE_ATTENTION_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { q, k, v, mask } = inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>;
    const [groups, G, D] = q.shape;
    return runProgram(backend, program(groups, G, D), [q, k, v, mask]);
  },
});
