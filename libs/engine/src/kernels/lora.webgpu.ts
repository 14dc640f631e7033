import * as tf from '@tensorflow/tfjs-core';
import type { HiddenAct } from '../config';
import type { StorageDtype } from '../dtype';
import type { HalfWeight } from '../model/linear';
import { weightReader } from './half-weights.wgsl';
import { wgslFloat } from './decode-step.wgsl';
import { gateActivationWgsl } from './gate-activation.wgsl';
import { addSplits, biasFinish, SplitsEpilogue } from './split-sums.webgpu';
import { productShape, productStore, productTilingKey, rowMajor, tiledProduct, tileKey, trainingTiling } from './tiled-product.wgsl';
import { disposeIntermediate, fusedKernelsApply, keptPrograms, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, storageBufferLimit, workgroupGrid, workgroupMemoryLimit } from './webgpu-program';

/**
 * A frozen projection with low-rank adapters (LoRA) for training on webgpu, forward and
 * backward, as WGSL: x [M, K], the frozen weight W [K, N] ([in, out], model/linear.ts: f32, or
 * held in 16 bits and unpacked as it is read, half-weights.wgsl.ts), an optional bias [N], and
 * adapters p on output columns [col_p, col_p + width_p), each with
 * factors A_p [K, r_p] and B_p [r_p, width_p] (the trained aT and bT) and a scale s_p:
 *
 *   h = x [A_0 | A_1 | ...]              [M, R], R the ranks together
 *   y = x W + b + s_p h_p B_p            on part p's columns
 *
 * and, from the output's gradient dy [M, N] (ops/linear-gradient.ts has the same maths in ops):
 *
 *   dh_p = s_p dy_p B_p^T,   dx = dy W^T + dh_p A_p^T,   dA_p = x^T dh_p,   dB_p = s_p h_p^T dy_p
 *
 * The forward is two dispatches (h, then y with the adapters' delta added to the frozen product
 * in its epilogue). The backward is two: dh with the dB's, which also read dy; then dx, frozen
 * and adapters' parts in one product (for the MLP's down SwiGLU's backward too), with the dA's,
 * which need only dh, in workgroups of the same dispatch after the product's. Where those pass
 * the device's storage buffers (eight on every device, as many as the adapter binds on the
 * engine's: storageBufferLimit), three or four: dh, dx, then every factor's gradient in one
 * program, or the A's and the B's in two. Where a training step's products split their inner
 * dimension (setProductSplits, trainingTiling), y's and dx's each write their splits' sums, and
 * one dispatch more adds them up and runs the epilogue (split-sums.webgpu.ts). The generic ops
 * take 7 dispatches a projection forward
 * and 14 backward for one adapter, about three times that for q|k|v's three. h is an output of
 * the forward, saved for the backward (ops/saved-activations.ts) instead of recomputed.
 *
 * Sizes other than M are compiled into each program (a projection's shapes never change); M is
 * a uniform, so one pipeline serves every step's token count.
 */
export const LORA_FORWARD_KERNEL = 'TrainyardLoraForward';
export const LORA_BACKWARD_KERNEL = 'TrainyardLoraBackward';

/** One adapter as the kernels take it: its factors, its scale as a number, the output columns it covers. */
export interface WebGpuLoraPart {
  aT: tf.Tensor2D;
  bT: tf.Tensor2D;
  scale: number;
  col: number;
  width: number;
}

/** Most adapters on one projection the programs take (q, k and v): the product's bindings are x, W, the bias, h, the B's and y. */
export const MAX_WEBGPU_LORA_PARTS = 3;

/** A part's compiled-in sizes: its rank, its offset among h's R columns, its columns of y. */
interface PartLayout {
  r: number;
  off: number;
  col: number;
  width: number;
  scale: number;
}

interface Layout {
  K: number;
  N: number;
  R: number;
  bias: boolean;
  parts: PartLayout[];
  /** How W is held: f32, or 16 bits a value (half-weights.wgsl.ts). */
  weights: StorageDtype;
}

function layoutOf(K: number, N: number, bias: boolean, parts: { r: number; col: number; width: number; scale: number }[], weights: StorageDtype): Layout {
  let off = 0;
  const laid = parts.map((p) => {
    const part = { ...p, off };
    off += p.r;
    return part;
  });
  return { K, N, R: off, bias, parts: laid, weights };
}

/** A key naming a layout's programs. */
function keyOf(kind: string, l: Layout): string {
  return `trainyardLora${kind}_${l.K}_${l.N}_${l.bias}_${l.weights}_${l.parts.map((p) => `${p.r},${p.col},${p.width},${p.scale}`).join(';')}`;
}


/** The bindings (webgpu-program.ts's order): 0 the uniforms, M alone, then the inputs, then the outputs. */
function bindings(inputs: string[], outputs: string[]): string {
  return multiOutputBindings('M : u32', inputs, outputs);
}

/** A program of this file's, with the names of the inputs it binds, in its WGSL's order (the caller's). */
interface LoraProgram extends MultiOutputProgram {
  inputs: string[];
}

/** The programs made, by their kind, layout and M (programFor). */
const programs = keptPrograms<LoraProgram>();

/**
 * The program `make` makes for a call (`call.key`: its layout and M), made at the first call with
 * these shapes; `variant` names which of this file's programs, with its options.
 */
function programFor(variant: string, call: { key: string }, make: () => LoraProgram): LoraProgram {
  return programs(`${variant}|${call.key}`, make);
}

/** Storage buffers a program binds: its inputs and its outputs. */
const storageBuffersOf = (program: LoraProgram) => program.inputs.length + program.outputShapes.length;

/** Threads that share one element's sum, each taking every LANES-th term. */
const LANES = 8;
/** Elements a workgroup of sums computes (LANES x ELEMENTS threads: 256, as a tiled product's workgroup has). */
const ELEMENTS = 32;

/**
 * One output of a program whose elements are each a long sum (over the rows M, or over K): its
 * name and shape, its element count (`count` for the host, `bound` in WGSL, which may read the
 * uniforms), `sum`, WGSL adding element `e`'s terms into `acc` (a lane's share: `terms(n)` is
 * the loop over them), and `store`, writing its `total`.
 */
interface SumBlock {
  name: string;
  shape: number[];
  count: number;
  bound: string;
  sum: string;
  store: string;
}

/** The workgroup memory sumsWgsl adds the lanes' sums in, and its bytes. */
const SUMS_MEMORY = `var<workgroup> partial : array<f32, ${LANES * ELEMENTS}>;`;
const SUMS_BYTES = 4 * LANES * ELEMENTS;

/**
 * WGSL computing the elements `first`, `first` + 1, ... (ELEMENTS of them) of `blocks`, one after
 * the other as if one flat output: LANES threads (of `tid`) an element, each adding every
 * LANES-th term, their sums added in workgroup memory (SUMS_MEMORY). A thread an element would
 * leave the GPU with a few thousand threads, each walking a thousand terms in turn.
 */
function sumsWgsl(blocks: SumBlock[], first: string): string {
  // The branch of the block that holds element i, with `code(block)` inside.
  const branches = (code: (b: SumBlock) => string) => {
    let start = '0u';
    return blocks
      .map((b) => {
        const branch = `if (i < ${start} + ${b.bound}) {
      let e = i - (${start});
      ${code(b)}
    }`;
        start = `${start} + ${b.bound}`;
        return branch;
      })
      .join(' else ');
  };
  return `  let i = ${first} + tid % ${ELEMENTS}u;
  let lane = tid / ${ELEMENTS}u;
  var acc = 0.0;
  ${branches((b) => b.sum)}
  partial[tid] = acc;
  workgroupBarrier();
  if (lane == 0u) {
    var total = 0.0;
    for (var r = 0u; r < ${LANES}u; r++) { total += partial[r * ${ELEMENTS}u + tid]; }
    ${branches((b) => b.store)}
  }`;
}

/** Workgroups sumsWgsl takes for every element of `blocks`. */
const sumsWorkgroups = (blocks: SumBlock[]) => Math.ceil(blocks.reduce((sum, b) => sum + b.count, 0) / ELEMENTS);

/** A program of `blocks` alone: its outputs, in order, each element a sum. */
function sumsProgram(key: string, inputs: string[], blocks: SumBlock[], M: number): LoraProgram {
  return {
    key,
    inputs,
    wgsl: () => `${bindings(inputs, blocks.map((b) => b.name))}
${SUMS_MEMORY}
@compute @workgroup_size(${LANES * ELEMENTS})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
${sumsWgsl(blocks, `(wg.y * groups.x + wg.x) * ${ELEMENTS}u`)}
}`,
    outputShapes: blocks.map((b) => b.shape),
    dispatch: workgroupGrid(sumsWorkgroups(blocks)),
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/** `for (var t = lane; t < n; t += LANES)`: a lane's share of n terms. */
const terms = (n: string) => `for (var t = lane; t < ${n}; t += ${LANES}u)`;

/**
 * An [M, R] output `name` (h, or its gradient dh), an element (m, j) a sum: `sum(p, i)` is the
 * WGSL that adds its terms into `acc`, `scale(p)` what the total is multiplied by, for the part p
 * (the i-th) whose columns of R hold j.
 */
function rankColumnsBlock(l: Layout, M: number, name: string, sum: (p: PartLayout, i: number) => string, scale: (p: PartLayout) => number): SumBlock {
  const { R } = l;
  const branches = (code: (p: PartLayout, i: number) => string) =>
    l.parts
      .map(
        (p, i) => `if (j < ${p.off + p.r}u) {
        ${code(p, i)}
      }`,
      )
      .join(' else ');
  const where = `let m = e / ${R}u;
      let j = e % ${R}u;`;
  return {
    name,
    shape: [M, R],
    count: M * R,
    bound: `u.M * ${R}u`,
    sum: `${where}
      ${branches(sum)}`,
    store: `${where}
      ${branches((p) => `${name}[e] = ${wgslFloat(scale(p))} * total;`)}`,
  };
}

/** h = x [A_0 | A_1 | ...], an element of h [M, R] a sum over K. */
function xaProgram(l: Layout, M: number): LoraProgram {
  const { K } = l;
  const h = rankColumnsBlock(l, M, 'h', (p, i) => `${terms(`${K}u`)} { acc += x[m * ${K}u + t] * a${i}[t * ${p.r}u + j - ${p.off}u]; }`, () => 1);
  return sumsProgram(keyOf('XA', l), ['x', ...l.parts.map((_, i) => `a${i}`)], [h], M);
}

/** The forward's epilogue (`finish`, as tiledProduct calls it): the bias, and each part's delta s_p h_p B_p on its columns. */
function forwardFinish(l: Layout): string {
  const deltas = l.parts
    .map(
      (p, i) => `  if (col >= ${p.col}u && col < ${p.col + p.width}u) {
    var d = 0.0;
    for (var j = 0u; j < ${p.r}u; j++) { d += h[row * ${l.R}u + ${p.off}u + j] * b${i}[j * ${p.width}u + col - ${p.col}u]; }
    y += ${wgslFloat(p.scale)} * d;
  }`,
    )
    .join('\n');
  return `fn finish(row : u32, col : u32, acc : f32) -> f32 {
  var y = acc;
${l.bias ? '  y += bias[col];\n' : ''}${deltas}
  return y;
}`;
}

/** The forward epilogue's inputs: the bias, h and the B's. */
const forwardEpilogueInputs = (l: Layout) => [...(l.bias ? ['bias'] : []), 'h', ...l.parts.map((_, i) => `b${i}`)];

/**
 * y = x W + b + s_p h_p B_p: the frozen product, its epilogue adding the bias and each part's
 * delta on its columns; split along K (trainingTiling), the product of each split alone, into
 * [splits, M, N], whose sums forwardEpilogue adds up and finishes.
 */
function productProgram(l: Layout, M: number): LoraProgram {
  const { K, N } = l;
  const w = weightReader('w', l.weights, N);
  const { tiling, splits, splitDepth } = trainingTiling(M, N, K);
  const inputs = ['x', w.binding, ...(splits === 1 ? forwardEpilogueInputs(l) : [])];
  return {
    key: `${keyOf('Product', l)}_${tileKey(tiling.tile)}_${splits}`,
    inputs,
    wgsl: () => `${bindings(inputs, ['y'])}
${w.helpers}
${splits === 1 ? forwardFinish(l) : biasFinish(false)}
${tiledProduct(K, N, tiling.tile, rowMajor('x', K), w.at, true, productStore('y', N, splits), null, splitDepth)}`,
    outputShapes: [productShape(splits, M, N)],
    dispatch: tiling.dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/** The forward's epilogue after a split product (addSplits), over `named`'s tensors. */
function forwardEpilogue(l: Layout, M: number, named: Record<string, tf.TensorInfo>): SplitsEpilogue {
  const inputs = forwardEpilogueInputs(l);
  return {
    key: keyOf('ForwardSums', l),
    inputs,
    tensors: inputs.map((name) => named[name]),
    wgsl: forwardFinish(l),
    output: 'y',
    shape: [M, l.N],
    store: productStore('y', l.N, 1),
  };
}

/** dh_p = s_p dy_p B_p^T, an element of dh [M, R] a sum over the part's width. */
function dhBlock(l: Layout, M: number): SumBlock {
  const { N } = l;
  return rankColumnsBlock(l, M, 'dh', (p, i) => `${terms(`${p.width}u`)} { acc += dy[m * ${N}u + ${p.col}u + t] * b${i}[(j - ${p.off}u) * ${p.width}u + t]; }`, (p) => p.scale);
}

/** dA_p = x^T dh_p [K, r_p], each element a sum over the M rows. */
function daBlocks(l: Layout): SumBlock[] {
  const { K, R } = l;
  return l.parts.map((p, i) => ({
    name: `da${i}`,
    shape: [K, p.r],
    count: K * p.r,
    bound: `${K * p.r}u`,
    sum: `let k = e / ${p.r}u;
      let j = e % ${p.r}u;
      ${terms('u.M')} { acc += x[t * ${K}u + k] * dh[t * ${R}u + ${p.off}u + j]; }`,
    store: `da${i}[e] = total;`,
  }));
}

/** dB_p = s_p h_p^T dy_p [r_p, width_p], each element a sum over the M rows. */
function dbBlocks(l: Layout): SumBlock[] {
  const { N, R } = l;
  return l.parts.map((p, i) => ({
    name: `db${i}`,
    shape: [p.r, p.width],
    count: p.r * p.width,
    bound: `${p.r * p.width}u`,
    sum: `let j = e / ${p.width}u;
      let n = e % ${p.width}u;
      ${terms('u.M')} { acc += h[t * ${R}u + ${p.off}u + j] * dy[t * ${N}u + ${p.col}u + n]; }`,
    store: `db${i}[e] = ${wgslFloat(p.scale)} * total;`,
  }));
}

/** dh, and with `withDb` every dB_p after it (both read dy): outputs dh, db0, db1, ... */
function dhProgram(l: Layout, M: number, withDb: boolean): LoraProgram {
  const inputs = ['dy', ...l.parts.map((_, i) => `b${i}`), ...(withDb ? ['h'] : [])];
  return sumsProgram(keyOf(withDb ? 'DhDb' : 'Dh', l), inputs, [dhBlock(l, M), ...(withDb ? dbBlocks(l) : [])], M);
}

/** The input gradient's epilogue (`finish`): each part's dh_p A_p^T added to dy W^T. */
function dxFinish(l: Layout): string {
  const adapters = l.parts.map((p, i) => `  for (var j = 0u; j < ${p.r}u; j++) { dx += dh[row * ${l.R}u + ${p.off}u + j] * a${i}[col * ${p.r}u + j]; }`).join('\n');
  return `fn finish(row : u32, col : u32, acc : f32) -> f32 {
  var dx = acc;
${adapters}
  return dx;
}`;
}

/**
 * The input gradient's store: dx [M, K], or with `gated` (the MLP's down, whose input was
 * a(gate) * up of gateUp [M, 2K]) the gate's backward, d gate = dx u a'(g) and d up = dx a(g),
 * into d gateUp [M, 2K] (ops/swiglu.ts, ops/gelu.ts; the arithmetic of swiglu.webgpu.ts's
 * programs, a dispatch fewer).
 */
function dxStore(K: number, gated: HiddenAct | null): (row: string, col: string, value: string) => string {
  if (!gated) return productStore('dx', K, 1);
  return (row, col, value) => `let d = ${value};
        let at = ${row} * ${2 * K}u + ${col};
        let g = gateUp[at];
        dx[at] = d * gateUp[at + ${K}u] * gateSlope(g);
        dx[at + ${K}u] = d * gateValue(g);`;
}

/** The input gradient epilogue's inputs: dh, the A's, and gateUp where `gated`. */
const dxEpilogueInputs = (l: Layout, gated: HiddenAct | null) => ['dh', ...l.parts.map((_, i) => `a${i}`), ...(gated ? ['gateUp'] : [])];

/** The input gradient epilogue's WGSL: the activation's functions where `gated`, and dxFinish. */
const dxEpilogueWgsl = (l: Layout, gated: HiddenAct | null) => `${gated ? gateActivationWgsl(gated) : ''}
${dxFinish(l)}`;

/**
 * dx = dy W^T + dh_p A_p^T: the frozen product (W read transposed), its epilogue adding the
 * adapters' part, its store dxStore's (through the MLP's activation where `gated`). With
 * `withDa`, every dA_p in workgroups of the same dispatch after the product's (both need only
 * dh): outputs dx, da0, da1, ... The product's tile fits `memory` (the device's workgroup
 * memory) beside the dA's sums. Split along N (trainingTiling), the product of each split alone,
 * into [splits, M, K], whose sums dxEpilogue adds up, finishes and stores.
 */
function dxProgram(l: Layout, M: number, gated: HiddenAct | null, withDa: boolean, memory: number): LoraProgram {
  const { K, N } = l;
  const w = weightReader('w', l.weights, N);
  const da = withDa ? daBlocks(l) : [];
  const extra = withDa ? { workgroups: sumsWorkgroups(da), body: sumsWgsl(da, `extra * ${ELEMENTS}u`) } : null;
  const { tiling, splits, splitDepth } = trainingTiling(M, K, N, extra?.workgroups ?? 0, memory - (withDa ? SUMS_BYTES : 0));
  const whole = splits === 1;
  const inputs = ['dy', w.binding, ...(whole ? dxEpilogueInputs(l, gated) : []), ...(withDa ? [...(whole ? [] : ['dh']), 'x'] : [])];
  return {
    key: `${keyOf(`Dx${withDa ? 'Da' : ''}${gated ? `_${gated}` : ''}`, l)}_${tileKey(tiling.tile)}_${splits}`,
    inputs,
    wgsl: () => `${bindings(inputs, ['dx', ...da.map((b) => b.name)])}
${w.helpers}
${withDa ? SUMS_MEMORY : ''}
${whole ? dxEpilogueWgsl(l, gated) : biasFinish(false)}
${tiledProduct(N, K, tiling.tile, rowMajor('dy', N), (n, c) => w.at(c, n), false, whole ? dxStore(K, gated) : productStore('dx', K, splits), extra, splitDepth)}`,
    outputShapes: [whole ? [M, gated ? 2 * K : K] : productShape(splits, M, K), ...da.map((b) => b.shape)],
    dispatch: tiling.dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/** The input gradient's epilogue after a split product (addSplits), over `named`'s tensors. */
function dxEpilogue(l: Layout, M: number, gated: HiddenAct | null, named: Record<string, tf.TensorInfo>): SplitsEpilogue {
  const inputs = dxEpilogueInputs(l, gated);
  return {
    key: keyOf(`DxSums${gated ? `_${gated}` : ''}`, l),
    inputs,
    tensors: inputs.map((name) => named[name]),
    wgsl: dxEpilogueWgsl(l, gated),
    output: 'dx',
    shape: [M, gated ? 2 * l.K : l.K],
    store: dxStore(l.K, gated),
  };
}

/** The factors' gradients alone, in one program ('AB': the A's, then the B's) or in two ('A', 'B'). */
function gradsProgram(l: Layout, M: number, which: 'A' | 'B' | 'AB'): LoraProgram {
  const blocks = [...(which !== 'B' ? daBlocks(l) : []), ...(which !== 'A' ? dbBlocks(l) : [])];
  const inputs = which === 'A' ? ['x', 'dh'] : which === 'B' ? ['h', 'dy'] : ['x', 'dh', 'h', 'dy'];
  return sumsProgram(keyOf(`Grads${which}`, l), inputs, blocks, M);
}

interface Attrs {
  bias: boolean;
  parts: { col: number; width: number; scale: number }[];
  /** The MLP's activation, where the backward goes through it (the down projection's dx). */
  activation?: HiddenAct;
  /** How W is held (its tensor [K, N] f32, or [K, N / 2] int32 for 16 bits). */
  weights: StorageDtype;
}

/**
 * A call's layout (x [M, K], W [K, N], the ranks of its A's a0, a1, ...), M, and a key naming
 * both and the products' tiles (programFor).
 */
function callOf(inputs: tf.NamedTensorInfoMap, attrs: Attrs): { l: Layout; M: number; key: string } {
  const { x, w } = inputs as Record<string, tf.TensorInfo>;
  const aTs = attrs.parts.map((_, i) => inputs[`a${i}`] as tf.TensorInfo);
  const N = attrs.weights === 'F32' ? w.shape[1] : 2 * w.shape[1];
  const l = layoutOf(x.shape[1], N, attrs.bias, attrs.parts.map((p, i) => ({ ...p, r: aTs[i].shape[1] })), attrs.weights);
  const M = x.shape[0];
  return { l, M, key: `${keyOf('', l)}_${M}_${productTilingKey()}` };
}

/** Runs `program` on the tensors its inputs name (`named`: by binding name, a mark such as ':u32' aside). */
function run(backend: object, program: LoraProgram, named: Record<string, tf.TensorInfo>): tf.TensorInfo[] {
  return runMultiOutputProgram(backend, program, program.inputs.map((input) => named[input.split(':')[0]]));
}

/** A call's tensors by the names the programs bind them by (the kernel's inputs: x, w, a0, b0, ...), for the intermediates h and dh to join. */
const namedTensors = (inputs: tf.NamedTensorInfoMap): Record<string, tf.TensorInfo> => ({ ...(inputs as Record<string, tf.TensorInfo>) });

tf.registerKernel({
  kernelName: LORA_FORWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const call = callOf(inputs, attrs as unknown as Attrs);
    const { l, M } = call;
    const named = namedTensors(inputs);
    [named.h] = run(backend, programFor('xa', call, () => xaProgram(l, M)), named);
    const [y] = run(backend, programFor('product', call, () => productProgram(l, M)), named);
    return [y.shape.length === 2 ? y : addSplits(backend, y, forwardEpilogue(l, M, named)), named.h];
  },
});

tf.registerKernel({
  kernelName: LORA_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const a = attrs as unknown as Attrs;
    const P = a.parts.length;
    const call = callOf(inputs, a);
    const { l, M } = call;
    const named = namedTensors(inputs);
    const gated = named.gateUp ? (a.activation ?? 'silu') : null;
    const dhOf = (withDb: boolean) => programFor(`dh_${withDb}`, call, () => dhProgram(l, M, withDb));
    const memory = workgroupMemoryLimit(backend);
    const dxOf = (withDa: boolean) => programFor(`dx_${gated}_${withDa}_${memory}`, call, () => dxProgram(l, M, gated, withDa, memory));
    const gradsOf = (which: 'A' | 'B' | 'AB') => programFor(`grads_${which}`, call, () => gradsProgram(l, M, which));
    const limit = storageBufferLimit(backend);
    const fit = (...programs: LoraProgram[]) => programs.every((program) => storageBuffersOf(program) <= limit);
    // dx's product, its splits added up and finished by a program of their own where it is split.
    const finished = (dx: tf.TensorInfo) => (dx.shape.length === 2 ? dx : addSplits(backend, dx, dxEpilogue(l, M, gated, named)));
    let dx: tf.TensorInfo;
    let dA: tf.TensorInfo[];
    let dB: tf.TensorInfo[];
    // Two dispatches where the device binds enough: dh with the dB's, then dx with the dA's.
    const [dhDb, dxDa] = [dhOf(true), dxOf(true)];
    if (fit(dhDb, dxDa)) {
      [named.dh, ...dB] = run(backend, dhDb, named);
      [dx, ...dA] = run(backend, dxDa, named);
      dx = finished(dx);
    } else {
      // Else dh, dx, then every factor's gradient in one program, or the A's and the B's in two.
      [named.dh] = run(backend, dhOf(false), named);
      dx = finished(run(backend, dxOf(false), named)[0]);
      const grads = fit(gradsOf('AB')) ? run(backend, gradsOf('AB'), named) : [...run(backend, gradsOf('A'), named), ...run(backend, gradsOf('B'), named)];
      [dA, dB] = [grads.slice(0, P), grads.slice(P)];
    }
    disposeIntermediate(backend, named.dh);
    // In the parts' order, A then B of each.
    return [dx, ...dA.flatMap((g, i) => [g, dB[i]])];
  },
});

/** Whether the programs take this projection: webgpu with fused kernels on and no tape, float32, 1 to 3 adapters. */
export function loraKernelsApplyOnWebGpu(x: tf.Tensor2D, parts: WebGpuLoraPart[]): boolean {
  return fusedKernelsApply() && x.dtype === 'float32' && parts.length > 0 && parts.length <= MAX_WEBGPU_LORA_PARTS && parts.every((p) => p.aT.dtype === 'float32' && p.bT.dtype === 'float32');
}

function callInputs(parts: WebGpuLoraPart[], weight: tf.Tensor2D | HalfWeight): { tensors: tf.NamedTensorMap; attrs: Attrs } {
  const tensors: tf.NamedTensorMap = { w: 'pairs' in weight ? weight.pairs : weight };
  parts.forEach((p, i) => {
    tensors[`a${i}`] = p.aT;
    tensors[`b${i}`] = p.bT;
  });
  const weights = 'pairs' in weight ? weight.dtype : 'F32';
  return { tensors, attrs: { bias: false, parts: parts.map(({ col, width, scale }) => ({ col, width, scale })), weights } };
}

/** Whether the programs read this weight: f32 [K, N], or held in 16 bits. */
function readable(weight: tf.Tensor2D | HalfWeight): boolean {
  return 'pairs' in weight || weight.dtype === 'float32';
}

/** y = x W + b plus the parts' deltas, and h = x [A_0 | ...] for the backward; null where the programs do not apply (loraKernelsApplyOnWebGpu). */
export function loraForwardOnWebGpu(x: tf.Tensor2D, weight: tf.Tensor2D | HalfWeight, bias: tf.Tensor1D | null, parts: WebGpuLoraPart[]): { y: tf.Tensor2D; h: tf.Tensor2D } | null {
  if (!loraKernelsApplyOnWebGpu(x, parts) || !readable(weight)) return null;
  const { tensors, attrs } = callInputs(parts, weight);
  attrs.bias = bias !== null;
  const [y, h] = tf.engine().runKernel(LORA_FORWARD_KERNEL, { x, ...(bias ? { bias } : {}), ...tensors }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D[];
  return { y, h };
}

/**
 * dx and each part's [dA, dB] from x, the forward's h and dy; null where the programs do not
 * apply. With `gate` (the projection is the MLP's down, its input the gated activation of
 * gateUp), dx is d gateUp [M, 2K] through that activation, in the same dispatch.
 */
export function loraBackwardOnWebGpu(
  x: tf.Tensor2D,
  h: tf.Tensor2D,
  dy: tf.Tensor2D,
  weight: tf.Tensor2D | HalfWeight,
  parts: WebGpuLoraPart[],
  gate: { gateUp: tf.Tensor2D; activation: HiddenAct } | null = null,
): { dx: tf.Tensor2D; grads: [tf.Tensor2D, tf.Tensor2D][] } | null {
  if (!loraKernelsApplyOnWebGpu(x, parts) || !readable(weight) || dy.dtype !== 'float32') return null;
  const gateUp = gate?.gateUp ?? null;
  const { tensors, attrs } = callInputs(parts, weight);
  if (gate) {
    attrs.activation = gate.activation;
    // The smallest program that takes the gate: dx alone.
    const call = callOf({ x, ...tensors }, attrs);
    const memory = workgroupMemoryLimit();
    const dx = programFor(`dx_${gate.activation}_false_${memory}`, call, () => dxProgram(call.l, call.M, gate.activation, false, memory));
    if (gate.gateUp.dtype !== 'float32' || gate.gateUp.shape[1] !== 2 * x.shape[1] || storageBuffersOf(dx) > storageBufferLimit()) return null;
  }
  const [dx, ...grads] = tf.engine().runKernel(LORA_BACKWARD_KERNEL, { x, h, dy, ...tensors, ...(gateUp ? { gateUp } : {}) }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D[];
  return { dx, grads: parts.map((_, i) => [grads[2 * i], grads[2 * i + 1]]) };
}
