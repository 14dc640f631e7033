import * as tf from '@tensorflow/tfjs-core';
import { flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, runProgram, WgslProgram, workgroupGrid } from './webgpu-program';

/**
 * Rotary embeddings x * cos + rotate_half(x) * sin for the q and k heads side by side
 * ([N, heads, D], model/rope.ts), as one elementwise WGSL dispatch on webgpu: each output
 * reads its own element and its partner half a head away (rotate_half(x) = [-x2, x1]). The
 * generic path takes four dispatches (a matMul by the signed permutation, two muls, an add).
 *
 * The q/k projection is not fused in: it is a FrozenLinear with LoRA adapters and per-row
 * routing (model/linear.ts), whose output feeds this kernel as it is. Dispatched by rope.ts,
 * which registers the same kernel name for wasm.
 */
export const ROPE_KERNEL = 'TrainyardRope';
const WORKGROUP = 64;

function program(shape: number[]): WgslProgram {
  const size = shape.reduce((a, b) => a * b, 1);
  return {
    variableNames: ['x', 'cosT', 'sinT'],
    outputShape: shape,
    shaderKey: 'trainyardRope',
    dispatchLayout: { x: shape.map((_, i) => i) },
    dispatch: [Math.ceil(size / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    getUserCode: () => `
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let half = uniforms.xShape[2] / 2;
        let first = index % uniforms.xShape[2] < half;
        let partner = x[select(index - half, index + half, first)];
        let rotated = select(partner, -partner, first);
        setOutputAtIndex(index, x[index] * cosT[index] + rotated * sinT[index]);
      }`,
  };
}

tf.registerKernel({
  kernelName: ROPE_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { x, cos, sin } = inputs as Record<'x' | 'cos' | 'sin', tf.TensorInfo>;
    return runProgram(backend, program(x.shape), [x, cos, sin]);
  },
});

/**
 * The gradient of q|k|v's projection output through RoPE and the heads' layouts in one
 * elementwise dispatch, for an explicit backward (ops/decoder-block-gradient.ts) where nothing
 * sits between the projection and RoPE: from attention's gradients dq (token-major [N, H*D]),
 * dk and dv (heads-first [B, KV, T, D]) and the tables cos, sin [N, H + KV, D], each thread
 * writes one element of d(q|k|v) [N, (H + 2 KV) D]: the q and k columns RoPE's backward, dy cos
 * - rotate_half(dy) sin (ops/rope.ts, ropeBackward), read from dq or from dk's heads-first
 * place; the v columns dv's, moved. The generic route takes five dispatches: two transposes,
 * two concats and RoPE's.
 */
export const ROPE_QKV_BACKWARD_KERNEL = 'TrainyardRopeQkvBackward';

function qkvBackwardProgram(N: number, H: number, KV: number, D: number): WgslProgram {
  return {
    variableNames: ['dq', 'dk', 'dv', 'cosT', 'sinT'],
    outputShape: [N, (H + 2 * KV) * D],
    shaderKey: `trainyardRopeQkvBackward_${H}_${KV}_${D}`,
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((N * (H + 2 * KV) * D) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    getUserCode: () => `
      // Element e of head row (n, head): q heads from dq, k heads from dk [B, KV, T, D] (n = b T + t).
      fn gradientAt(n : i32, head : i32, e : i32) -> f32 {
        if (head < ${H}) { return dq[(n * ${H} + head) * ${D} + e]; }
        let T = uniforms.dkShape[2];
        return dk[(((n / T) * ${KV} + head - ${H}) * T + n % T) * ${D} + e];
      }
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let width = ${(H + 2 * KV) * D};
        let n = index / width;
        let c = index % width;
        let head = c / ${D};
        let e = c % ${D};
        if (head >= ${H + KV}) {
          let T = uniforms.dvShape[2];
          setOutputAtIndex(index, dv[(((n / T) * ${KV} + head - ${H + KV}) * T + n % T) * ${D} + e]);
          return;
        }
        let half = ${D / 2};
        let first = e < half;
        let partner = gradientAt(n, head, select(e - half, e + half, first));
        let at = (n * ${H + KV} + head) * ${D} + e;
        // dx = dy cos - rotate_half(dy) sin, rotate_half(dy) = [-dy2, dy1].
        setOutputAtIndex(index, gradientAt(n, head, e) * cosT[at] + select(-partner, partner, first) * sinT[at]);
      }`,
  };
}

tf.registerKernel({
  kernelName: ROPE_QKV_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { dq, dk, dv, cos, sin } = inputs as Record<'dq' | 'dk' | 'dv' | 'cos' | 'sin', tf.TensorInfo>;
    const [N, heads, D] = cos.shape;
    const KV = dk.shape[1];
    return runProgram(backend, qkvBackwardProgram(N, heads - KV, KV, D), [dq, dk, dv, cos, sin]);
  },
});

/**
 * The q|k|v projection's output [N, (H + 2 KV) D] made ready for attention in one elementwise
 * dispatch, where nothing sits between the projection and RoPE (no q_norm or k_norm): q
 * rotated and token-major [N, H*D], k rotated and v moved, both heads-first [B, KV, T, D]
 * (n = b T + t), with the tables cos, sin [N, H + KV, D]. ropeQkvBackward's forward twin; the
 * generic route takes seven dispatches: four column slices, RoPE's and two transposes.
 */
export const ROPE_QKV_KERNEL = 'TrainyardRopeQkv';

function qkvProgram(N: number, T: number, H: number, KV: number, D: number): MultiOutputProgram {
  const B = N / T;
  return {
    key: `trainyardRopeQkv_${H}_${KV}_${D}`,
    wgsl: () => `${multiOutputBindings('N : u32, T : u32', ['x', 'cosT', 'sinT'], ['q', 'k', 'v'])}
const H : u32 = ${H}u;
const KV : u32 = ${KV}u;
const D : u32 = ${D}u;
const W : u32 = ${(H + 2 * KV) * D}u;
${flatMain(WORKGROUP)}
  if (i >= u.N * W) { return; }
  let n = i / W;
  let head = (i % W) / D;
  let e = i % D;
  // Where this element of k's or v's head (head - H) % KV lies heads-first (unused for q's heads).
  let headsFirst = (((n / u.T) * KV + (head - H) % KV) * u.T + n % u.T) * D + e;
  if (head >= H + KV) {
    v[headsFirst] = x[i];
    return;
  }
  let half = D / 2u;
  let first = e < half;
  let partner = x[select(i - half, i + half, first)];
  let at = (n * (H + KV) + head) * D + e;
  // x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1].
  let rotated = x[i] * cosT[at] + select(partner, -partner, first) * sinT[at];
  if (head < H) {
    q[n * H * D + head * D + e] = rotated;
  } else {
    k[headsFirst] = rotated;
  }
}`,
    outputShapes: [
      [N, H * D],
      [B, KV, T, D],
      [B, KV, T, D],
    ],
    dispatch: workgroupGrid(Math.ceil((N * (H + 2 * KV) * D) / WORKGROUP)),
    uniforms: [
      { type: 'uint32', value: N },
      { type: 'uint32', value: T },
    ],
  };
}

tf.registerKernel({
  kernelName: ROPE_QKV_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { qkv, cos, sin } = inputs as Record<'qkv' | 'cos' | 'sin', tf.TensorInfo>;
    const { kvHeads: KV, T } = attrs as unknown as { kvHeads: number; T: number };
    const [N, heads, D] = cos.shape;
    return runMultiOutputProgram(backend, qkvProgram(N, T, heads - KV, KV, D), [qkv, cos, sin]);
  },
});
