import * as tf from '@tensorflow/tfjs-core';
import type { FrozenLinear, LinearAdapter, RoutedAdapter, RoutedMember } from '../model/linear';
import type { LlamaModel } from '../model/llama';
import { LoraAttachment, LoraLayer, linearFor } from './lora-layer';

/**
 * Several LoRA adapters of one base model served in one batch, each row of a forward pass
 * with its own adapter or none (multi-tenant LoRA serving, as in S-LoRA and Punica, here with
 * dense ops). For each projection the adapters in use are laid side by side: their A^T as
 * [in, R] and their B^T as [R, out], R the sum of their ranks; a 0/1 mask [tokens, R] keeps,
 * for each token, only the rank columns of its row's adapter:
 *
 *   delta = ((x A^T_cat) * M) B^T_cat,   so token i gets x_i A_k^T B_k^T for its adapter k.
 *
 * That is two matMuls and a multiply per projection however many adapters share the batch.
 * Where the LoRA kernel applies (wasm; ranks and widths multiples of 4) the projection instead
 * adds each adapter's delta to its own rows with it (RoutedLora.members, kernels/lora.ts), one
 * call per run of consecutive rows, so a decoding step still runs each block in one call
 * (kernels/decode-block.ts) and a row gets the bits it gets with its adapter alone. When every
 * row uses the same adapter, its own layers are hooked in unchanged; when no row uses one, the
 * base model runs alone.
 *
 * The attachments are serving adapters (applyAdapter, then detach()): the router hooks them
 * in itself, so none of them may be attached on its own while the router is in use.
 */
export class LoraRouter {
  private readonly ids = new WeakMap<LoraAttachment, number>();
  private nextId = 0;
  /** The projection parts the router has put adapters on. */
  private hooked: { linear: FrozenLinear; part: string }[] = [];
  /** Concatenated factors of the current set of adapters, and its key. */
  private stacked = new Map<string, Stack>();
  private stackedKey = '';
  /** Masks of the current routing, by token count and projection members. */
  private masks = new Map<string, tf.Tensor2D>();
  /** Each member's rows under the current routing, by token count and projection members. */
  private memberRows = new Map<string, number[][]>();
  private rows: (LoraAttachment | null)[] = [];
  private distinct: LoraAttachment[] = [];

  constructor(readonly model: LlamaModel) {}

  /**
   * Which adapter (or null: the base model) each row of the next forward passes uses, in the
   * order of the rows. Forward passes of rows x T tokens repeat each row's choice T times.
   */
  route(rows: readonly (LoraAttachment | null)[]): void {
    this.unhook();
    this.rows = [...rows];
    this.distinct = [...new Set(rows.filter((a): a is LoraAttachment => a !== null))];
    if (this.distinct.length === 0) return;
    if (this.distinct.length === 1 && rows.every((a) => a === this.distinct[0])) {
      for (const layer of this.distinct[0].layers) this.hook(layer.layer, layer.target, layer);
      return;
    }
    this.restack();
    for (const [key, stack] of this.stacked) {
      const [layer, target] = splitKey(key);
      this.hook(layer, target, new RoutedLora(this, stack));
    }
  }

  /** The mask [tokens, R] of one projection's members for the current routing. */
  maskFor(tokens: number, stack: Stack): tf.Tensor2D {
    const key = `${tokens}|${stack.members.join(',')}`;
    let mask = this.masks.get(key);
    if (mask) return mask;
    const R = stack.ranks.reduce((a, b) => a + b, 0);
    const data = new Float32Array(tokens * R);
    const offsets = stack.ranks.map((_, i) => stack.ranks.slice(0, i).reduce((a, b) => a + b, 0));
    this.rowsFor(tokens, stack).forEach((rows, m) => {
      for (const token of rows) data.fill(1, token * R + offsets[m], token * R + offsets[m] + stack.ranks[m]);
    });
    mask = tf.keep(tf.tensor2d(data, [tokens, R]));
    this.masks.set(key, mask);
    return mask;
  }

  /** For each of one projection's members, the tokens of a forward pass of `tokens` that use it, ascending. */
  rowsFor(tokens: number, stack: Stack): number[][] {
    const key = `${tokens}|${stack.members.join(',')}`;
    let rows = this.memberRows.get(key);
    if (rows) return rows;
    const perRow = tokens / this.rows.length;
    if (!Number.isInteger(perRow)) throw new Error(`a forward pass of ${tokens} tokens does not fit ${this.rows.length} routed rows`);
    rows = stack.members.map(() => []);
    this.rows.forEach((adapter, row) => {
      const m = adapter ? stack.members.indexOf(this.idOf(adapter)) : -1;
      if (m >= 0) for (let t = 0; t < perRow; t++) rows[m].push(row * perRow + t);
    });
    this.memberRows.set(key, rows);
    return rows;
  }

  /** Removes the router's hooks and frees what it built; the attachments stay the caller's. */
  dispose(): void {
    this.unhook();
    this.dropStacks();
  }

  /** Factors of the current adapters concatenated per projection, rebuilt when the set changes. */
  private restack(): void {
    const key = this.distinct.map((a) => this.idOf(a)).join(',');
    if (key === this.stackedKey) return;
    this.dropStacks();
    const parts = new Map<string, { layers: LoraLayer[]; members: number[] }>();
    for (const adapter of this.distinct) {
      for (const layer of adapter.layers) {
        const k = `${layer.layer}|${layer.target}`;
        const entry = parts.get(k) ?? { layers: [], members: [] };
        entry.layers.push(layer);
        entry.members.push(this.idOf(adapter));
        parts.set(k, entry);
      }
    }
    for (const [k, { layers, members }] of parts) {
      const aT = tf.keep(layers.length === 1 ? tf.clone(layers[0].aT) : tf.concat(layers.map((l) => l.aT), 1));
      const bT = tf.keep(layers.length === 1 ? tf.clone(layers[0].bT) : tf.concat(layers.map((l) => l.bT), 0));
      this.stacked.set(k, { aT, bT, ranks: layers.map((l) => l.aT.shape[1]), members, layers });
    }
    this.stackedKey = key;
  }

  private idOf(adapter: LoraAttachment): number {
    let id = this.ids.get(adapter);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(adapter, id);
    }
    return id;
  }

  private hook(layer: number, target: LoraLayer['target'], adapter: LinearAdapter): void {
    const linear = linearFor(this.model, layer, target);
    linear.setAdapter(target, adapter);
    this.hooked.push({ linear, part: target });
  }

  private unhook(): void {
    for (const { linear, part } of this.hooked) linear.setAdapter(part, null);
    this.hooked = [];
    this.masks.forEach((m) => m.dispose());
    this.masks.clear();
    this.memberRows.clear();
  }

  private dropStacks(): void {
    for (const s of this.stacked.values()) {
      s.aT.dispose();
      s.bT.dispose();
    }
    this.stacked.clear();
    this.stackedKey = '';
  }
}

/** One projection's adapters concatenated, and the adapters themselves, in the same order. */
interface Stack {
  aT: tf.Tensor2D;
  bT: tf.Tensor2D;
  ranks: number[];
  /** The router's ids of the adapters. */
  members: number[];
  layers: LoraLayer[];
}

/**
 * One projection's adapters under a LoraRouter: ((x A^T_cat) * mask) B^T_cat as tfjs ops, or
 * each adapter on its own rows (members) where the projection adds them with the LoRA kernel.
 */
class RoutedLora implements RoutedAdapter {
  readonly routed = true;

  constructor(
    private readonly router: LoraRouter,
    private readonly stack: Stack,
  ) {}

  forward(x: tf.Tensor2D): tf.Tensor2D {
    const mask = this.router.maskFor(x.shape[0], this.stack);
    return tf.matMul(tf.mul(tf.matMul(x, this.stack.aT), mask), this.stack.bT) as tf.Tensor2D;
  }

  members(tokens: number): RoutedMember[] {
    const rows = this.router.rowsFor(tokens, this.stack);
    return this.stack.layers.map((layer, m) => ({ aT: layer.aT, bT: layer.bT, scaleFactor: layer.scaleFactor, rows: rows[m] }));
  }
}

function splitKey(key: string): [number, LoraLayer['target']] {
  const [layer, target] = key.split('|');
  return [Number(layer), target as LoraLayer['target']];
}
