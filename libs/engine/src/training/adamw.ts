import * as tf from '@tensorflow/tfjs-core';
import { adamwKernelAvailable, adamwMomentLayout, adamwStep, adamwStepOnGpu, AdamWStep, sumOfSquares } from '../kernels/adamw';

export interface AdamWOptions {
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (Loshchilov & Hutter): p -= lr * weightDecay * p. */
  weightDecay?: number;
  /** Clip the global L2 norm of all gradients to this; 0 or null disables. */
  maxGradNorm?: number | null;
}

/** The reference trainer's optimizer: betas (0.9, 0.99), weight decay 0.1, max grad norm 0.1. */
export const REFERENCE_ADAMW: Required<AdamWOptions> = { beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.1 };

/**
 * AdamW with bias correction and global-norm gradient clipping, as torch.optim.AdamW and
 * torch.nn.utils.clip_grad_norm_ do it (tfjs has Adam, but neither decoupled weight decay nor
 * global clipping). The learning rate is given per step, so any schedule is the caller's.
 *
 * For each parameter p with gradient g (after clipping), at step t (1-based):
 *   m = b1 m + (1 - b1) g          v = b2 v + (1 - b2) g^2
 *   p = p - lr wd p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 */
export class AdamW {
  readonly options: Required<AdamWOptions>;
  /**
   * First and second moments per parameter. On wasm and webgpu they are tensors beside the
   * parameters, laid out as kernels/adamw.ts's adamwMomentLayout says (m and v, or both
   * interleaved in one), and kernels update them with the parameters; elsewhere they are in JS
   * memory and a JS loop updates them, from the gradients and parameters read back (as tfjs ops
   * the update is about 16 kernel dispatches per parameter, 6,700 a step for a 7-target LoRA on
   * 30 layers). The wasm kernel gives the JS loop's bits; webgpu's computes in float32.
   */
  private readonly deviceMoments = new Map<tf.Variable, DeviceMoments>();
  private readonly jsMoments = new Map<tf.Variable, { m: Float32Array; v: Float32Array }>();
  private t = 0;

  constructor(options: AdamWOptions = {}) {
    this.options = {
      beta1: options.beta1 ?? 0.9,
      beta2: options.beta2 ?? 0.999,
      eps: options.eps ?? 1e-8,
      weightDecay: options.weightDecay ?? 0.01,
      maxGradNorm: options.maxGradNorm ?? null,
    } as Required<AdamWOptions>;
  }

  get step(): number {
    return this.t;
  }

  /**
   * Applies one update. Returns the global gradient norm before clipping (what torch's
   * clip_grad_norm_ returns and trainers log as grad_norm). Does not dispose `grads`.
   * `overrides` replace the optimizer's options for this step only (a Tinker client sends
   * Adam's settings with every optim_step).
   */
  async apply(params: tf.Variable[], grads: tf.Tensor[], learningRate: number, overrides: AdamWOptions = {}): Promise<number> {
    if (params.length !== grads.length) throw new Error(`${params.length} parameters, ${grads.length} gradients`);
    const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = { ...this.options, ...defined } as Required<AdamWOptions>;
    params.forEach((p, i) => {
      if (!tf.util.arraysEqual(p.shape, grads[i].shape)) throw new Error(`gradient ${i} has shape [${grads[i].shape}], parameter [${p.shape}]`);
    });
    this.t += 1;
    const step: Omit<AdamWStep, 'clip'> = {
      beta1,
      beta2,
      correction1: 1 - Math.pow(beta1, this.t),
      correction2: 1 - Math.pow(beta2, this.t),
      eps,
      learningRate,
      decay: weightDecay ? 1 - learningRate * weightDecay : 1,
    };
    const onDevice = adamwKernelAvailable();
    if (onDevice && adamwMomentLayout() === 'interleaved') return this.applyOnGpu(params, grads, step, maxGradNorm ?? 0);
    const g = onDevice ? null : ((await Promise.all(grads.map((t) => t.data()))) as Float32Array[]);
    const norm = Math.sqrt(g ? sumOfSquaresOf(g) : sumOfSquares(grads));
    // torch: clip_coef = max_norm / (total_norm + 1e-6), applied only when below 1.
    const clip = maxGradNorm && norm > maxGradNorm ? maxGradNorm / (norm + 1e-6) : 1;
    if (g) await this.applyInJs(params, g, { ...step, clip });
    else this.applyOnWasm(params, grads, { ...step, clip });
    return norm;
  }

  /** Steps taken and each parameter's first and second moments (null where it has none yet), for a saved training state. */
  async exportMoments(params: tf.Variable[]): Promise<{ step: number; moments: ({ m: Float32Array; v: Float32Array } | null)[] }> {
    const moments = [];
    for (const p of params) {
      const device = this.deviceMoments.get(p);
      const js = this.jsMoments.get(p);
      if (device) moments.push(await momentValues(device));
      else if (js) moments.push({ m: js.m.slice(), v: js.v.slice() });
      else moments.push(null);
    }
    return { step: this.t, moments };
  }

  /** Restores exportMoments' result onto `params` (the same parameters, in the same order, maybe new variables). */
  importMoments(params: tf.Variable[], state: { step: number; moments: ({ m: Float32Array; v: Float32Array } | null)[] }): void {
    if (state.moments.length !== params.length) throw new Error(`${state.moments.length} moments for ${params.length} parameters`);
    this.dispose();
    this.t = state.step;
    params.forEach((p, i) => {
      const moment = state.moments[i];
      if (!moment) return;
      if (moment.m.length !== p.size || moment.v.length !== p.size) throw new Error(`moments ${i} have ${moment.m.length} values for a parameter of ${p.size}`);
      if (adamwKernelAvailable()) this.deviceMoments.set(p, momentTensors(p, moment));
      else this.jsMoments.set(p, { m: moment.m.slice(), v: moment.v.slice() });
    });
  }

  dispose(): void {
    for (const moments of this.deviceMoments.values()) tf.dispose(Object.values(moments));
    this.deviceMoments.clear();
    this.jsMoments.clear();
  }

  private momentsOf(p: tf.Variable): DeviceMoments {
    let moments = this.deviceMoments.get(p);
    if (!moments) this.deviceMoments.set(p, (moments = momentTensors(p, null)));
    return moments;
  }

  /**
   * On webgpu the whole step, clipping included, is recorded before anything is read back: the
   * GPU goes from the backward pass to the update without waiting for the host, and the norm is
   * read once the update is on its way. A new tensor for each p; the interleaved moments are
   * updated where they are.
   */
  private async applyOnGpu(params: tf.Variable[], grads: tf.Tensor[], step: Omit<AdamWStep, 'clip'>, maxGradNorm: number): Promise<number> {
    if (params.length === 0) return 0;
    const parameters = params.map((p, i) => ({ p, g: grads[i], mv: (this.momentsOf(p) as { mv: tf.Tensor }).mv }));
    const { next, stats } = adamwStepOnGpu(parameters, step, maxGradNorm);
    params.forEach((p, i) => p.assign(next[i]));
    tf.dispose(next);
    try {
      return Math.sqrt((await stats.data())[0]);
    } finally {
      stats.dispose();
    }
  }

  /** The wasm kernel, parameter by parameter: new tensors for p, m and v replacing the old. */
  private applyOnWasm(params: tf.Variable[], grads: tf.Tensor[], step: AdamWStep): void {
    params.forEach((p, i) => {
      const moments = this.momentsOf(p) as { m: tf.Tensor; v: tf.Tensor };
      const [next, m, v] = adamwStep(p, grads[i], moments.m, moments.v, step);
      p.assign(next);
      tf.dispose([next, moments.m, moments.v]);
      this.deviceMoments.set(p, { m: tf.keep(m), v: tf.keep(v) });
    });
  }

  /** The same update in a JS loop over the values read back, for backends without the kernel. */
  private async applyInJs(params: tf.Variable[], g: Float32Array[], step: AdamWStep): Promise<void> {
    const { clip, beta1, beta2, correction1, correction2, eps, learningRate, decay } = step;
    const values = (await Promise.all(params.map((p) => p.data()))) as Float32Array[];
    tf.tidy(() => {
      params.forEach((p, i) => {
        const gi = g[i];
        let moments = this.jsMoments.get(p);
        if (!moments) this.jsMoments.set(p, (moments = { m: new Float32Array(p.size), v: new Float32Array(p.size) }));
        const { m, v } = moments;
        const current = values[i];
        const next = new Float32Array(current.length);
        for (let j = 0; j < next.length; j++) {
          const grad = gi[j] * clip;
          m[j] = beta1 * m[j] + (1 - beta1) * grad;
          v[j] = beta2 * v[j] + (1 - beta2) * grad * grad;
          const update = m[j] / correction1 / (Math.sqrt(v[j] / correction2) + eps);
          next[j] = current[j] * decay - learningRate * update;
        }
        p.assign(tf.tensor(next, p.shape, 'float32'));
      });
    });
  }
}

/** A parameter's moments as adamwMomentLayout lays them out: m and v, or m and v interleaved in one flat tensor. */
type DeviceMoments = { m: tf.Tensor; v: tf.Tensor } | { mv: tf.Tensor };

/** A parameter's moments as tensors, kept: from saved values, or zero (`values` null). */
function momentTensors(p: tf.Variable, values: { m: Float32Array; v: Float32Array } | null): DeviceMoments {
  const m = values?.m ?? new Float32Array(p.size);
  const v = values?.v ?? new Float32Array(p.size);
  if (adamwMomentLayout() === 'separate') return { m: tf.keep(tf.tensor(m, p.shape)), v: tf.keep(tf.tensor(v, p.shape)) };
  const mv = new Float32Array(2 * p.size);
  for (let i = 0; i < p.size; i++) {
    mv[2 * i] = m[i];
    mv[2 * i + 1] = v[i];
  }
  return { mv: tf.keep(tf.tensor1d(mv)) };
}

/** A parameter's moments read back as m and v. */
async function momentValues(moments: DeviceMoments): Promise<{ m: Float32Array; v: Float32Array }> {
  if (!('mv' in moments)) return { m: (await moments.m.data()) as Float32Array, v: (await moments.v.data()) as Float32Array };
  const mv = (await moments.mv.data()) as Float32Array;
  const n = mv.length / 2;
  const m = new Float32Array(n);
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    m[i] = mv[2 * i];
    v[i] = mv[2 * i + 1];
  }
  return { m, v };
}

/** The sum of squares of every element, in float64, one after the other. */
function sumOfSquaresOf(arrays: Float32Array[]): number {
  let squares = 0;
  for (const values of arrays) for (let j = 0; j < values.length; j++) squares += values[j] * values[j];
  return squares;
}

/** sqrt(sum of squares of every element of every tensor), read back as a number. */
export async function globalNorm(tensors: tf.Tensor[]): Promise<number> {
  if (tensors.length === 0) return 0;
  const sq = tf.tidy(() => tf.addN(tensors.map((t) => tf.sum(tf.square(t)))));
  const value = Math.sqrt((await sq.data())[0]);
  sq.dispose();
  return value;
}
