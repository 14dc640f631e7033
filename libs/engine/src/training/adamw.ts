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
  private readonly m = new Map<tf.Variable, tf.Variable>();
  private readonly v = new Map<tf.Variable, tf.Variable>();
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
  apply(params: tf.Variable[], grads: tf.Tensor[], learningRate: number): number {
    if (params.length !== grads.length) throw new Error(`${params.length} parameters, ${grads.length} gradients`);
    const { beta1, beta2, eps, weightDecay, maxGradNorm } = this.options;
    const norm = globalNorm(grads);
    // torch: clip_coef = max_norm / (total_norm + 1e-6), applied only when below 1.
    const clip = maxGradNorm && norm > maxGradNorm ? maxGradNorm / (norm + 1e-6) : 1;
    this.t += 1;
    const correction1 = 1 - Math.pow(beta1, this.t);
    const correction2 = 1 - Math.pow(beta2, this.t);
    tf.tidy(() => {
      params.forEach((p, i) => {
        const g = clip === 1 ? grads[i] : tf.mul(grads[i], clip);
        const m = this.slot(this.m, p);
        const v = this.slot(this.v, p);
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const update = tf.div(tf.div(m, correction1), tf.add(tf.sqrt(tf.div(v, correction2)), eps));
        const decayed = weightDecay ? tf.mul(p, 1 - learningRate * weightDecay) : p;
        p.assign(tf.sub(decayed, tf.mul(update, learningRate)));
      });
    });
    return norm;
  }

  dispose(): void {
    for (const s of [...this.m.values(), ...this.v.values()]) s.dispose();
    this.m.clear();
    this.v.clear();
  }

  private slot(slots: Map<tf.Variable, tf.Variable>, p: tf.Variable): tf.Variable {
    let s = slots.get(p);
    if (!s) {
      s = tf.variable(tf.zerosLike(p), false);
      slots.set(p, s);
    }
    return s;
  }
}

/** sqrt(sum of squares of every element of every tensor), read back as a number. */
export function globalNorm(tensors: tf.Tensor[]): number {
  if (tensors.length === 0) return 0;
  const sq = tf.tidy(() => tf.addN(tensors.map((t) => tf.sum(tf.square(t)))));
  const value = Math.sqrt(sq.dataSync()[0]);
  sq.dispose();
  return value;
}
