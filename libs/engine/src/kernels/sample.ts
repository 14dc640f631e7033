import * as tf from '@tensorflow/tfjs-core';
import { DRAW_ROW_WGSL, SAMPLE_WORKGROUP } from './decode-step.wgsl';
import { fusedKernelsApply, runProgram, WgslProgram, WORKGROUP_INDEX } from './webgpu-program';

/**
 * The next token of each row of logits [B, V], and its log-probability, chosen on the GPU in
 * one WGSL dispatch on webgpu, so that 2 numbers per row come back instead of V: a decode step
 * at batch 128 and a 151936-token vocabulary otherwise reads back 78 MB. It draws as
 * sampling.ts's sampleToken does without top-k, top-p or a logits processor (drawRow in
 * decode-step.wgsl.ts, which the encoded decoding step's sampler runs too). Summed in another
 * order than sampleToken's, a draw within float rounding of a boundary between two tokens may
 * pick the other one.
 */
const KERNEL_NAME = 'TrainyardSample';

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
    workgroupSize: [SAMPLE_WORKGROUP, 1, 1],
    // drawRow, shared with the encoded decoding step's sampler; tfjs declares logits, draws and result.
    getUserCode: () => `
      ${DRAW_ROW_WGSL}

      fn main(index : i32) {
        let valid = ${WORKGROUP_INDEX} < uniforms.logitsShape[0];
        let row = min(${WORKGROUP_INDEX}, uniforms.logitsShape[0] - 1);
        drawRow(u32(row), u32(uniforms.logitsShape[1]), u32(localId.x), valid);
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
