import * as tf from '@tensorflow/tfjs-core';
import { wgslFloat, WORKGROUP, WORKGROUP_REDUCTIONS_WGSL } from './decode-step.wgsl';
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

/**
 * ropeQkv for the families with q_norm and k_norm (Qwen3, Gemma 3), forward and backward, one
 * dispatch each: a workgroup takes one head of one token, since each q and k head is RMSNorm'd
 * over its D values (HeadNorms: x / sqrt(mean(x^2) + eps) * gamma, gamma [2 D] q_norm's then
 * k_norm's weights) before RoPE turns it. The forward writes ropeQkv's q, k and v; the backward,
 * from attention's dq, dk and dv and the projection's output x it saved, writes d(q|k|v): for a
 * q or k head, RoPE's backward g (as ropeQkvBackward's) then the norm's,
 *
 *   dx = r gamma g - x r^3 sum(gamma g x) / D,   r = 1 / sqrt(mean(x^2) + eps)
 *
 * and dv moved back for a v head. The generic route takes about twenty dispatches a layer more:
 * column slices, two RMSNorms each way, concats and transposes.
 */
export const ROPE_QKV_NORMED_KERNEL = 'TrainyardRopeQkvNormed';
export const ROPE_QKV_NORMED_BACKWARD_KERNEL = 'TrainyardRopeQkvNormedBackward';

/** What both programs share: sizes, a head's values in workgroup memory, reduceSum (a sum over the workgroup), heads-first indices. */
function normedHeadWgsl(H: number, KV: number, D: number, eps: number): string {
  return `const H : u32 = ${H}u;
const KV : u32 = ${KV}u;
const D : u32 = ${D}u;
const HEADS : u32 = ${H + 2 * KV}u;
const EPS : f32 = ${wgslFloat(eps)};
var<workgroup> y : array<f32, ${D}>;
${WORKGROUP_REDUCTIONS_WGSL}

/** Element e of head h (a k or v head of index h % KV) of token n, heads-first [B, KV, T, D]. */
fn headsFirst(n : u32, h : u32, e : u32) -> u32 {
  return (((n / u.T) * KV + (h - H) % KV) * u.T + n % u.T) * D + e;
}`;
}

/** The workgroup's (token, head), clamped into range (threads past the end compute and write nothing: no return before a barrier). */
const NORMED_HEAD_MAIN = `@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let flat = wg.y * groups.x + wg.x;
  let valid = flat < u.N * HEADS;
  let index = min(flat, u.N * HEADS - 1u);
  let n = index / HEADS;
  let head = index % HEADS;
  let half = D / 2u;`;

function qkvNormedProgram(N: number, T: number, H: number, KV: number, D: number, eps: number): MultiOutputProgram {
  const B = N / T;
  return {
    key: `trainyardRopeQkvNormed_${H}_${KV}_${D}_${eps}`,
    wgsl: () => `${multiOutputBindings('N : u32, T : u32', ['x', 'cosT', 'sinT', 'gamma'], ['q', 'k', 'v'])}
${normedHeadWgsl(H, KV, D, eps)}
${NORMED_HEAD_MAIN}
  let src = n * HEADS * D + head * D;
  if (head >= H + KV) {
    for (var e = tid; e < D; e += ${WORKGROUP}u) {
      if (valid) { v[headsFirst(n, head, e)] = x[src + e]; }
    }
    return;
  }
  var squares = 0.0;
  for (var e = tid; e < D; e += ${WORKGROUP}u) { squares += x[src + e] * x[src + e]; }
  let r = inverseSqrt(reduceSum(tid, squares) / f32(D) + EPS);
  let g = select(D, 0u, head < H);
  for (var e = tid; e < D; e += ${WORKGROUP}u) { y[e] = x[src + e] * r * gamma[g + e]; }
  workgroupBarrier();
  for (var e = tid; e < D; e += ${WORKGROUP}u) {
    let first = e < half;
    let partner = y[select(e - half, e + half, first)];
    let at = (n * (H + KV) + head) * D + e;
    // y cos + rotate_half(y) sin, rotate_half(y) = [-y2, y1].
    let rotated = y[e] * cosT[at] + select(partner, -partner, first) * sinT[at];
    if (valid && head < H) { q[(n * H + head) * D + e] = rotated; }
    if (valid && head >= H) { k[headsFirst(n, head, e)] = rotated; }
  }
}`,
    outputShapes: [
      [N, H * D],
      [B, KV, T, D],
      [B, KV, T, D],
    ],
    dispatch: workgroupGrid(N * (H + 2 * KV)),
    uniforms: [
      { type: 'uint32', value: N },
      { type: 'uint32', value: T },
    ],
  };
}

function qkvNormedBackwardProgram(N: number, T: number, H: number, KV: number, D: number, eps: number): MultiOutputProgram {
  return {
    key: `trainyardRopeQkvNormedBackward_${H}_${KV}_${D}_${eps}`,
    wgsl: () => `${multiOutputBindings('N : u32, T : u32', ['dq', 'dk', 'dv', 'cosT', 'sinT', 'x', 'gamma'], ['dx'])}
${normedHeadWgsl(H, KV, D, eps)}
/** Attention's gradient of element e of q head or k head \`head\` of token n. */
fn rotatedGradient(n : u32, head : u32, e : u32) -> f32 {
  if (head < H) { return dq[(n * H + head) * D + e]; }
  return dk[headsFirst(n, head, e)];
}
${NORMED_HEAD_MAIN}
  let src = n * HEADS * D + head * D;
  if (head >= H + KV) {
    for (var e = tid; e < D; e += ${WORKGROUP}u) {
      if (valid) { dx[src + e] = dv[headsFirst(n, head, e)]; }
    }
    return;
  }
  // RoPE's backward into y (dx = dy cos - rotate_half(dy) sin), times gamma; the two sums the norm's backward needs.
  let g = select(D, 0u, head < H);
  var squares = 0.0;
  var dot = 0.0;
  for (var e = tid; e < D; e += ${WORKGROUP}u) {
    let first = e < half;
    let partner = rotatedGradient(n, head, select(e - half, e + half, first));
    let at = (n * (H + KV) + head) * D + e;
    let dy = (rotatedGradient(n, head, e) * cosT[at] + select(-partner, partner, first) * sinT[at]) * gamma[g + e];
    y[e] = dy;
    squares += x[src + e] * x[src + e];
    dot += dy * x[src + e];
  }
  let r = inverseSqrt(reduceSum(tid, squares) / f32(D) + EPS);
  let c = reduceSum(tid, dot) * r * r * r / f32(D);
  for (var e = tid; e < D; e += ${WORKGROUP}u) {
    if (valid) { dx[src + e] = r * y[e] - x[src + e] * c; }
  }
}`,
    outputShapes: [[N, (H + 2 * KV) * D]],
    dispatch: workgroupGrid(N * (H + 2 * KV)),
    uniforms: [
      { type: 'uint32', value: N },
      { type: 'uint32', value: T },
    ],
  };
}

tf.registerKernel({
  kernelName: ROPE_QKV_NORMED_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { qkv, cos, sin, gamma } = inputs as Record<'qkv' | 'cos' | 'sin' | 'gamma', tf.TensorInfo>;
    const { kvHeads: KV, T, eps } = attrs as unknown as { kvHeads: number; T: number; eps: number };
    const [N, heads, D] = cos.shape;
    return runMultiOutputProgram(backend, qkvNormedProgram(N, T, heads - KV, KV, D, eps), [qkv, cos, sin, gamma]);
  },
});

tf.registerKernel({
  kernelName: ROPE_QKV_NORMED_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dq, dk, dv, cos, sin, qkv, gamma } = inputs as Record<'dq' | 'dk' | 'dv' | 'cos' | 'sin' | 'qkv' | 'gamma', tf.TensorInfo>;
    const { eps } = attrs as unknown as { eps: number };
    const [N, heads, D] = cos.shape;
    const KV = dk.shape[1];
    const [dx] = runMultiOutputProgram(backend, qkvNormedBackwardProgram(N, dk.shape[2], heads - KV, KV, D, eps), [dq, dk, dv, cos, sin, qkv, gamma]);
    return dx;
  },
});
