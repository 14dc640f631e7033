import * as tf from '@tensorflow/tfjs-core';

/**
 * Gradient definitions for the kernels a training step records.
 *
 * @tensorflow/tfjs-core registers no gradients itself: the umbrella @tensorflow/tfjs package
 * imports `@tensorflow/tfjs-core/dist/register_all_gradients`, which is an ES-module tree with
 * extensionless relative imports. Node cannot load it (neither require nor import: the
 * specifiers do not resolve), jest cannot load it, and the CommonJS bundle that `main` points
 * to (dist/tf-core.node.js) does not contain the gradient configs at all. So the engine
 * registers the ones it needs here, written against the public ops and mirroring tfjs's own
 * definitions (dist/gradients/*_grad.js) line for line. A kernel that already has a gradient
 * (e.g. a bundler-built app that imported register_all_gradients) keeps it.
 *
 * The set is the closure of what LlamaModel.hidden, targetLogprobs, the LoRA adapters and the
 * losses use; a missing one shows up at once as tfjs's "gradient function not found" error,
 * and the finite-difference test in test/training checks the maths of every one used.
 */

type Saved = tf.Tensor[];
type Attrs = Record<string, unknown>;

/** Sums dy over the axes `shape` was broadcast along, then restores `shape`. */
function unbroadcast(dy: tf.Tensor, shape: number[], outShape: number[]): tf.Tensor {
  const axes = tf.backend_util.getReductionAxes(shape, outShape);
  return tf.reshape(axes.length > 0 ? tf.sum(dy, axes) : dy, shape);
}

function binary(saved: Saved): { a: tf.Tensor; b: tf.Tensor; out: number[] } {
  const [a, b] = saved;
  return { a, b, out: tf.backend_util.assertAndGetBroadcastShape(a.shape, b.shape) };
}

/** Rank 2, or higher with every batch dimension 1. */
function isSingleMatrix(x: tf.Tensor): boolean {
  return x.shape.slice(0, -2).every((n) => n === 1);
}

/** Swaps the last two axes. */
function swapLastTwo(x: tf.Tensor): tf.Tensor {
  const perm = x.shape.map((_, i) => i);
  perm[perm.length - 2] = perm.length - 1;
  perm[perm.length - 1] = perm.length - 2;
  return tf.transpose(x, perm);
}

const configs: tf.GradConfig[] = [
  {
    kernelName: tf.Add,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const { a, b, out } = binary(saved);
      return { a: () => unbroadcast(dy as tf.Tensor, a.shape, out), b: () => unbroadcast(dy as tf.Tensor, b.shape, out) };
    },
  },
  {
    kernelName: tf.AddN,
    saveAllInputs: true,
    gradFunc: (dy, saved) => Object.fromEntries(saved.map((_, i) => [i, () => (dy as tf.Tensor).clone()])),
  },
  {
    kernelName: tf.Sub,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const { a, b, out } = binary(saved);
      return { a: () => unbroadcast(dy as tf.Tensor, a.shape, out), b: () => tf.neg(unbroadcast(dy as tf.Tensor, b.shape, out)) };
    },
  },
  {
    kernelName: tf.Multiply,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const { a, b, out } = binary(saved);
      return {
        a: () => unbroadcast(tf.mul(dy as tf.Tensor, tf.cast(b, 'float32')), a.shape, out),
        b: () => unbroadcast(tf.mul(dy as tf.Tensor, tf.cast(a, 'float32')), b.shape, out),
      };
    },
  },
  {
    kernelName: tf.RealDiv,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const { a, b, out } = binary(saved);
      return {
        a: () => unbroadcast(tf.div(dy as tf.Tensor, tf.cast(b, 'float32')), a.shape, out),
        b: () => tf.neg(tf.div(unbroadcast(tf.mul(dy as tf.Tensor, tf.cast(a, 'float32')), b.shape, out), tf.square(b))),
      };
    },
  },
  {
    kernelName: tf.Maximum,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const [a, b] = saved;
      return {
        a: () => tf.mul(dy as tf.Tensor, tf.cast(tf.greaterEqual(a, b), 'float32')),
        b: () => tf.mul(dy as tf.Tensor, tf.cast(tf.less(a, b), 'float32')),
      };
    },
  },
  {
    kernelName: tf.Minimum,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const [a, b] = saved;
      return {
        a: () => tf.mul(dy as tf.Tensor, tf.cast(tf.lessEqual(a, b), 'float32')),
        b: () => tf.mul(dy as tf.Tensor, tf.cast(tf.greater(a, b), 'float32')),
      };
    },
  },
  {
    kernelName: tf.ClipByValue,
    inputsToSave: ['x'],
    gradFunc: (dy, saved, attrs) => {
      const [x] = saved;
      const { clipValueMin, clipValueMax } = attrs as unknown as { clipValueMin: number; clipValueMax: number };
      const inside = tf.logicalAnd(tf.greaterEqual(x, clipValueMin), tf.lessEqual(x, clipValueMax));
      return { x: () => tf.where(inside, dy as tf.Tensor, tf.zerosLike(dy as tf.Tensor)) };
    },
  },
  { kernelName: tf.Neg, gradFunc: (dy) => ({ x: () => tf.neg(dy as tf.Tensor) }) },
  { kernelName: tf.Exp, outputsToSave: [true], gradFunc: (dy, saved) => ({ x: () => tf.mul(dy as tf.Tensor, saved[0]) }) },
  { kernelName: tf.Log, inputsToSave: ['x'], gradFunc: (dy, saved) => ({ x: () => tf.div(dy as tf.Tensor, tf.cast(saved[0], 'float32')) }) },
  { kernelName: tf.Square, inputsToSave: ['x'], gradFunc: (dy, saved) => ({ x: () => tf.mul(dy as tf.Tensor, tf.mul(tf.cast(saved[0], 'float32'), 2)) }) },
  {
    kernelName: tf.Sqrt,
    inputsToSave: ['x'],
    gradFunc: (dy, saved) => ({ x: () => tf.div(dy as tf.Tensor, tf.mul(tf.sqrt(tf.cast(saved[0], 'float32')), 2)) }),
  },
  {
    kernelName: tf.Rsqrt,
    inputsToSave: ['x'],
    gradFunc: (dy, saved) => ({ x: () => tf.neg(tf.div(dy as tf.Tensor, tf.mul(tf.pow(saved[0], 1.5), 2))) }),
  },
  {
    kernelName: tf.Sigmoid,
    outputsToSave: [true],
    gradFunc: (dy, saved) => {
      const [y] = saved;
      return { x: () => tf.mul(dy as tf.Tensor, tf.mul(y, tf.sub(tf.scalar(1), y))) };
    },
  },
  { kernelName: tf.Cast, gradFunc: (dy) => ({ x: () => (dy as tf.Tensor).clone() }) },
  { kernelName: tf.Identity, gradFunc: (dy) => ({ x: () => tf.cast(dy as tf.Tensor, 'float32') }) },
  { kernelName: tf.Reshape, inputsToSave: ['x'], gradFunc: (dy, saved) => ({ x: () => tf.reshape(dy as tf.Tensor, saved[0].shape) }) },
  {
    kernelName: tf.Transpose,
    gradFunc: (dy, _saved, attrs) => {
      const undo = tf.backend_util.getUndoAxesPermutation((attrs as Attrs)['perm'] as number[]);
      return { x: () => tf.transpose(dy as tf.Tensor, undo) };
    },
  },
  {
    kernelName: tf.SplitV,
    gradFunc: (dy, _saved, attrs) => ({ x: () => tf.concat(dy as tf.Tensor[], (attrs as Attrs)['axis'] as number) }),
  },
  {
    kernelName: tf.Concat,
    saveAllInputs: true,
    gradFunc: (dy, saved, attrs) => {
      const axis = tf.util.parseAxisParam((attrs as Attrs)['axis'] as number, saved[0].shape)[0];
      const parts = tf.split(dy as tf.Tensor, saved.map((t) => t.shape[axis]), axis);
      return Object.fromEntries(parts.map((t, i) => [i, () => t]));
    },
  },
  {
    kernelName: tf.Slice,
    inputsToSave: ['x'],
    gradFunc: (dy, saved, attrs) => {
      const [x] = saved;
      const { begin, size } = attrs as unknown as { begin: number[]; size: number[] };
      const [b, s] = tf.slice_util.parseSliceParams(x, begin, size);
      const paddings = x.shape.map((n, i) => [b[i], n - b[i] - s[i]] as [number, number]);
      return { x: () => tf.pad(dy as tf.Tensor, paddings) };
    },
  },
  {
    kernelName: tf.Sum,
    inputsToSave: ['x'],
    gradFunc: (dy, saved, attrs) => {
      const [x] = saved;
      const expanded = x.shape.slice();
      for (const a of tf.util.parseAxisParam((attrs as Attrs)['axis'] as number[], x.shape)) expanded[a] = 1;
      return { x: () => tf.mul(tf.reshape(dy as tf.Tensor, expanded), tf.ones(x.shape, 'float32')) };
    },
  },
  {
    kernelName: tf.Mean,
    inputsToSave: ['x'],
    gradFunc: (dy, saved, attrs) => {
      const [x] = saved;
      const axes = tf.util.parseAxisParam((attrs as Attrs)['axis'] as number[], x.shape);
      const expanded = x.shape.slice();
      let count = 1;
      for (const a of axes) {
        expanded[a] = 1;
        count *= x.shape[a];
      }
      return { x: () => tf.div(tf.mul(tf.reshape(dy as tf.Tensor, expanded), tf.ones(x.shape, 'float32')), count) };
    },
  },
  {
    kernelName: tf.Softmax,
    outputsToSave: [true],
    gradFunc: (dy, saved, attrs) => {
      const [y] = saved;
      const dyTimesY = tf.mul(dy as tf.Tensor, y);
      return { logits: () => tf.sub(dyTimesY, tf.mul(tf.sum(dyTimesY, [(attrs as Attrs)['dim'] as number], true), y)) };
    },
  },
  {
    kernelName: tf.LogSoftmax,
    outputsToSave: [true],
    gradFunc: (dy, saved, attrs) => {
      const [value] = saved;
      const axis = (attrs as Attrs)['axis'] as number;
      return { logits: () => tf.sub(dy as tf.Tensor, tf.mul(tf.sum(dy as tf.Tensor, axis, true), tf.exp(value))) };
    },
  },
  {
    kernelName: tf.BatchMatMul,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved, attrs) => {
      const [a, b] = saved;
      const d = dy as tf.Tensor;
      const { transposeA, transposeB } = attrs as unknown as { transposeA: boolean; transposeB: boolean };
      if (isSingleMatrix(a) && isSingleMatrix(b)) {
        // XNNPACK's fast path (wasm) only takes untransposed matMuls with one matrix per side:
        // transpose the operands explicitly (cheap, they are activations or LoRA factors) so
        // that every product below stays on it (a transposed matMul is 10-20x slower there).
        const t = swapLastTwo;
        if (!transposeA && !transposeB) return { a: () => tf.matMul(d, t(b)), b: () => tf.matMul(t(a), d) };
        if (!transposeA && transposeB) return { a: () => tf.matMul(d, b), b: () => tf.matMul(t(d), a) };
        if (transposeA && !transposeB) return { a: () => tf.matMul(b, t(d)), b: () => tf.matMul(a, d) };
        return { a: () => tf.matMul(t(b), t(d)), b: () => tf.matMul(t(d), t(a)) };
      }
      if (!transposeA && !transposeB) return { a: () => tf.matMul(d, b, false, true), b: () => tf.matMul(a, d, true, false) };
      if (!transposeA && transposeB) return { a: () => tf.matMul(d, b, false, false), b: () => tf.matMul(d, a, true, false) };
      if (transposeA && !transposeB) return { a: () => tf.matMul(b, d, false, true), b: () => tf.matMul(a, d, false, false) };
      return { a: () => tf.matMul(b, d, true, true), b: () => tf.matMul(d, a, true, true) };
    },
  },
];

let registered = false;

/** Registers the gradients above for every kernel that has none yet. Idempotent. */
export function ensureTrainingGradients(): void {
  if (registered) return;
  for (const config of configs) {
    if (!tf.getGradient(config.kernelName)) tf.registerGradient(config);
  }
  registered = true;
}
