import * as tf from '@tensorflow/tfjs-core';

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
   * First and second moments per parameter, in JS memory. The update is a handful of
   * elementwise operations per parameter; as tfjs ops that is ~16 kernel dispatches per
   * parameter (6,700 for a 7-target LoRA on 30 layers, about 0.14 s per step on wasm), while a
   * JS loop over the same 2.4 M numbers takes a few milliseconds.
   */
  private readonly m = new Map<tf.Variable, Float32Array>();
  private readonly v = new Map<tf.Variable, Float32Array>();
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
   */
  async apply(params: tf.Variable[], grads: tf.Tensor[], learningRate: number): Promise<number> {
    if (params.length !== grads.length) throw new Error(`${params.length} parameters, ${grads.length} gradients`);
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = this.options;
    params.forEach((p, i) => {
      if (!tf.util.arraysEqual(p.shape, grads[i].shape)) throw new Error(`gradient ${i} has shape [${grads[i].shape}], parameter [${p.shape}]`);
    });
    const g = (await Promise.all(grads.map((t) => t.data()))) as Float32Array[];
    const values = (await Promise.all(params.map((p) => p.data()))) as Float32Array[];
    let squares = 0;
    for (const values of g) for (let j = 0; j < values.length; j++) squares += values[j] * values[j];
    const norm = Math.sqrt(squares);
    // torch: clip_coef = max_norm / (total_norm + 1e-6), applied only when below 1.
    const clip = maxGradNorm && norm > maxGradNorm ? maxGradNorm / (norm + 1e-6) : 1;
    this.t += 1;
    const correction1 = 1 - Math.pow(beta1, this.t);
    const correction2 = 1 - Math.pow(beta2, this.t);
    const decay = weightDecay ? 1 - learningRate * weightDecay : 1;
    tf.tidy(() => {
      params.forEach((p, i) => {
        const gi = g[i];
        const m = this.slot(this.m, p);
        const v = this.slot(this.v, p);
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
    return norm;
  }

  dispose(): void {
    this.m.clear();
    this.v.clear();
  }

  private slot(slots: Map<tf.Variable, Float32Array>, p: tf.Variable): Float32Array {
    let s = slots.get(p);
    if (!s) {
      s = new Float32Array(p.size);
      slots.set(p, s);
    }
    return s;
  }
}

/** sqrt(sum of squares of every element of every tensor), read back as a number. */
export async function globalNorm(tensors: tf.Tensor[]): Promise<number> {
  if (tensors.length === 0) return 0;
  const sq = tf.tidy(() => tf.addN(tensors.map((t) => tf.sum(tf.square(t)))));
  const value = Math.sqrt((await sq.data())[0]);
  sq.dispose();
  return value;
}
