import * as tf from '@tensorflow/tfjs-core';
import { fusedKernelsApply, runProgram, WgslProgram, WORKGROUP_INDEX } from './webgpu-program';

/**
 * The next token of each row of logits [B, V], and its log-probability, chosen on the GPU in
 * one WGSL dispatch on webgpu, so that 2 numbers per row come back instead of V: a decode step
 * at batch 128 and a 151936-token vocabulary otherwise reads back 78 MB.
 *
 * It draws as sampling.ts's sampleToken does without top-k, top-p or a logits processor: the
 * argmax when greedy (temperature 0; the first among equals) with log-softmax(logits)[id], else
 * with weights w_i = exp((logit_i - max) / temperature) the first token whose running sum of
 * weights passes u * sum(w), u the row's uniform draw, with log(w_id / sum(w)). One workgroup
 * per row: each thread takes a contiguous slice of the vocabulary, the workgroup reduces the
 * maximum (and argmax) and the slice sums, and one thread walks the slice sums, then the slice
 * where the draw falls. Summed in another order than sampleToken's, a draw within float
 * rounding of a boundary between two tokens may pick the other one.
 */
const KERNEL_NAME = 'TrainyardSample';
const WORKGROUP = 256;

/** How one row is drawn: temperature 0 is greedy; u is the uniform draw in [0, 1) (unused when greedy). */
export interface RowDraw {
  temperature: number;
  u: number;
}

export interface DrawnToken {
  id: number;
  logprob: number;
}

function program(rows: number): WgslProgram {
  return {
    variableNames: ['logits', 'draws'],
    outputShape: [rows, 2],
    shaderKey: 'trainyardSample',
    dispatchLayout: { x: [0, 1] },
    dispatch: [rows, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    getUserCode: () => `
      var<workgroup> values : array<f32, ${WORKGROUP}>;
      var<workgroup> ids : array<i32, ${WORKGROUP}>;

      fn main(index : i32) {
        let valid = ${WORKGROUP_INDEX} < uniforms.logitsShape[0];
        let row = min(${WORKGROUP_INDEX}, uniforms.logitsShape[0] - 1);
        let V = uniforms.logitsShape[1];
        let base = row * V;
        let temperature = draws[row * 2];
        let greedy = temperature <= 0.0;
        let scale = select(1.0 / temperature, 1.0, greedy);
        let tid = i32(localId.x);
        let slice = (V + ${WORKGROUP - 1}) / ${WORKGROUP};
        let lo = min(tid * slice, V);
        let hi = min(lo + slice, V);

        // The maximum and the first index holding it.
        var best = -uniforms.INFINITY;
        var bestId = V;
        for (var i = lo; i < hi; i++) {
          let value = logits[base + i];
          if (value > best) { best = value; bestId = i; }
        }
        values[tid] = best;
        ids[tid] = bestId;
        workgroupBarrier();
        for (var n = ${WORKGROUP / 2}; n > 0; n = n / 2) {
          if (tid < n) {
            let other = values[tid + n];
            let otherId = ids[tid + n];
            if (other > values[tid] || (other == values[tid] && otherId < ids[tid])) {
              values[tid] = other;
              ids[tid] = otherId;
            }
          }
          workgroupBarrier();
        }
        let top = values[0];
        let argmax = ids[0];
        workgroupBarrier();

        var sum = 0.0;
        for (var i = lo; i < hi; i++) { sum += exp((logits[base + i] - top) * scale); }
        values[tid] = sum;
        workgroupBarrier();

        if (valid && tid == 0) {
          var total = 0.0;
          for (var t = 0; t < ${WORKGROUP}; t++) { total += values[t]; }
          var id = argmax;
          var logprob = logits[base + argmax] - top - log(total);
          if (!greedy) {
            var rest = draws[row * 2 + 1] * total;
            // The slice where the draw falls: the last one with weight if rounding runs past the end.
            var chosen = 0;
            for (var t = 0; t < ${WORKGROUP}; t++) {
              if (values[t] > 0.0) { chosen = t; }
              if (rest < values[t]) { break; }
              rest -= values[t];
            }
            let first = chosen * slice;
            let last = min(first + slice, V);
            var weight = 0.0;
            for (var i = first; i < last; i++) {
              let w = exp((logits[base + i] - top) * scale);
              if (w > 0.0) {
                id = i;
                weight = w;
                rest -= w;
                if (rest < 0.0) { break; }
              }
            }
            logprob = log(weight) - log(total);
          }
          result[row * 2] = f32(id);
          result[row * 2 + 1] = logprob;
        }
      }`,
  };
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { logits, draws } = inputs as Record<'logits' | 'draws', tf.TensorInfo>;
    return runProgram(backend, program(logits.shape[0]), [logits, draws]);
  },
});

/** True when drawOnDevice runs the kernel: webgpu, fused kernels on. */
export function drawOnDeviceAvailable(): boolean {
  return fusedKernelsApply();
}

/**
 * One token per row of logits [B, V] (V < 2^24: ids travel as float32), drawn on the GPU;
 * null where the kernel does not apply (then read the logits back and use sampleToken).
 */
export async function drawOnDevice(logits: tf.Tensor2D, rows: readonly RowDraw[]): Promise<DrawnToken[] | null> {
  if (!drawOnDeviceAvailable() || logits.dtype !== 'float32' || logits.shape[1] >= 1 << 24) return null;
  if (rows.length !== logits.shape[0]) throw new Error(`drawOnDevice: ${rows.length} draws for ${logits.shape[0]} rows`);
  const draws = tf.tensor2d(rows.flatMap((r) => [r.temperature, r.u]), [rows.length, 2]);
  const out = tf.engine().runKernel(KERNEL_NAME, { logits, draws }, {}) as tf.Tensor2D;
  draws.dispose();
  try {
    const values = await out.data();
    return rows.map((_, i) => ({ id: values[2 * i], logprob: values[2 * i + 1] }));
  } finally {
    out.dispose();
  }
}
