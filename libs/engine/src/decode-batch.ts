import * as tf from '@tensorflow/tfjs-core';
import { WebGpuDecodeStep } from './kernels/decode-step.webgpu';
import { DrawnToken, drawOnDevice, RowDraw } from './kernels/sample';
import { KVCache } from './model/kv-cache';
import type { LlamaModel } from './model/llama';
import type { PromptCache } from './prompt-cache';
import { SeededRandom } from './random';
import { sampleToken } from './sampling';

/** Prompts longer than this are prefilled in pieces, bounding the [T, T] attention scores. */
const PREFILL_CHUNK = 256;

/** Where join() looks for an already prefilled beginning of a prompt, and keeps the prompt. */
export interface PromptReuse {
  cache: PromptCache;
  /** What else the keys and values depend on besides the model, e.g. the LoRA adapter: prompts are only shared within one namespace. */
  namespace: string;
}

/** Most logits the lm_head makes at once while scoring a prompt, in floats (32 MB), as training's chunks. */
const MAX_SCORED_LOGITS = 1 << 23;

/**
 * A prompt's own next-token logprobs, from the prefill that joined it (joinScored): for each
 * position t >= 1, log p(prompt[t] | prompt[..t]) = log_softmax(logits)[prompt[t]], the number
 * the training forward (targetLogprobs) computes; and with topK the k most likely tokens there.
 */
export interface PromptScores {
  /** [prompt.length - 1]: position t's value at index t - 1. */
  logprobs: Float32Array;
  /** With topK > 0, row-major [prompt.length - 1, k]: ids and logprobs, most likely first; else null. */
  top: { k: number; ids: Int32Array; logprobs: Float32Array } | null;
}

/** A row of the cache whose sequence left: taken by the next join, or dropped at the next step. */
const LEFT: unique symbol = Symbol('left');

/**
 * Sequences decoding together: the unit continuous batching is built on. Each sequence joins
 * with its prompt (prefilled alone, then merged into the shared KV cache), advances one token
 * per step() together with every other member in one forward pass, and leaves when done.
 * Members can join and leave between any two steps. A sequence that leaves keeps its row until
 * the next join takes it over (KVCache.replaceRow: on webgpu and wasm written in place, so the
 * cache's tensors, and the encoded step's bind groups over them, stay) or the next step drops
 * every row left over in one copy of the cache.
 */
export class DecodeBatch<Id = string> {
  private readonly cache: KVCache;
  /** Each row of the cache, in cache order: its member, or LEFT. */
  private members: (Id | typeof LEFT)[] = [];
  /** Per member, the tokens of its prompt that were reused instead of prefilled. */
  private readonly reused = new Map<Id, number>();
  /** The last stepMixed's members, in row order, and where its logits are (lastLogits): read back, or on the GPU as of that step. */
  private lastStep: { members: readonly Id[]; logits: Float32Array | { step: WebGpuDecodeStep; encoded: number } } | null = null;
  /** The members of the last run on the GPU (stepsDrawn), in row order, while none has joined or left since: what a run fed on the GPU continues (stepsDrawnAfter). */
  private lastRun: { members: readonly Id[]; step: WebGpuDecodeStep } | null = null;

  constructor(readonly model: LlamaModel) {
    this.cache = model.newCache();
  }

  get size(): number {
    return this.ids.length;
  }

  /** The members, in the order of their rows. */
  get ids(): readonly Id[] {
    return this.members.filter((member): member is Id => member !== LEFT);
  }

  has(id: Id): boolean {
    return this.members.includes(id);
  }

  /** Tokens in the cache for a member (prompt + generated so far). */
  length(id: Id): number {
    return this.cache.lengths()[this.row(id)];
  }

  /**
   * Prefills `prompt` and adds the sequence; returns the logits for its first new token.
   * With `reuse`, the longest beginning of the prompt that its cache holds is not prefilled
   * again, and the prompt is kept there for the next one.
   */
  async join(id: Id, prompt: number[], reuse?: PromptReuse): Promise<Float32Array> {
    if (this.has(id)) throw new Error(`sequence ${String(id)} is already in the batch`);
    if (prompt.length === 0) throw new Error('empty prompt');
    this.lastStep = null;
    const hit = reuse?.cache.lookup(this.model, reuse.namespace, prompt) ?? null;
    let own = hit?.cache;
    if (!own) {
      own = this.model.newCache();
      own.addEmptyRow();
    }
    try {
      let values = hit?.logits ?? null;
      if (!values) {
        values = await this.prefill(own, prompt.slice(hit?.length ?? 0));
        reuse?.cache.store(this.model, reuse.namespace, prompt, own, values);
      }
      this.place(id, own);
      this.reused.set(id, hit?.length ?? 0);
      return values;
    } finally {
      own.dispose();
    }
  }

  /**
   * As join, and scores the prompt on the way: every position's logits are kept (in chunks)
   * to give the prompt's logprobs and, with `topK`, its top-k tokens per position. The whole
   * prompt is prefilled (a prompt-cache hit would skip the positions to score); it is still
   * stored there for the prompts that follow.
   */
  async joinScored(id: Id, prompt: number[], topK: number, reuse?: PromptReuse): Promise<{ logits: Float32Array; scores: PromptScores }> {
    if (this.has(id)) throw new Error(`sequence ${String(id)} is already in the batch`);
    if (prompt.length === 0) throw new Error('empty prompt');
    this.lastStep = null;
    const own = this.model.newCache();
    own.addEmptyRow();
    try {
      const { logits, scores } = await this.prefillScored(own, prompt, topK);
      reuse?.cache.store(this.model, reuse.namespace, prompt, own, logits);
      this.place(id, own);
      this.reused.set(id, 0);
      return { logits, scores };
    } finally {
      own.dispose();
    }
  }

  private async prefillScored(cache: KVCache, prompt: number[], topK: number): Promise<{ logits: Float32Array; scores: PromptScores }> {
    const V = this.model.config.vocabSize;
    const T = prompt.length;
    const k = Math.min(Math.max(0, topK), V);
    const logprobs = new Float32Array(T - 1);
    const top = k > 0 ? { k, ids: new Int32Array((T - 1) * k), logprobs: new Float32Array((T - 1) * k) } : null;
    const headRows = Math.max(1, Math.floor(MAX_SCORED_LOGITS / V));
    let last: Float32Array | null = null;
    for (let start = 0; start < T; start += PREFILL_CHUNK) {
      const chunk = prompt.slice(start, start + PREFILL_CHUNK);
      const hidden = this.model.hidden([chunk], { cache });
      try {
        for (let from = 0; from < chunk.length; from += headRows) {
          const n = Math.min(headRows, chunk.length - from);
          // Position p (of the prompt) predicts prompt[p + 1]; the last one predicts the first new token.
          const first = start + from;
          const scored = Math.min(n, T - 1 - first);
          const [values, topValues, topIds, lastRow] = tf.tidy(() => {
            const logits = this.model.lmHead.forward(tf.slice(hidden, [from, 0], [n, -1]));
            const out: tf.Tensor[] = [];
            if (scored > 0) {
              const logSoftmax = tf.logSoftmax(tf.slice(logits, [0, 0], [scored, -1]));
              const at = prompt.slice(first + 1, first + 1 + scored).map((target, r) => r * V + target);
              out.push(tf.gather(tf.reshape(logSoftmax, [-1]), tf.tensor1d(at, 'int32')));
              if (top) {
                const best = tf.topk(logSoftmax, k);
                out.push(best.values, best.indices);
              } else {
                out.push(tf.zeros([0]), tf.zeros([0], 'int32'));
              }
            } else {
              out.push(tf.zeros([0]), tf.zeros([0]), tf.zeros([0], 'int32'));
            }
            out.push(first + n === T ? tf.slice(logits, [n - 1, 0], [1, -1]) : tf.zeros([0]));
            return out;
          });
          try {
            logprobs.set((await values.data()) as Float32Array, first);
            if (top && scored > 0) {
              top.logprobs.set((await topValues.data()) as Float32Array, first * k);
              top.ids.set((await topIds.data()) as Int32Array, first * k);
            }
            if (first + n === T) last = Float32Array.from((await lastRow.data()) as Float32Array);
          } finally {
            tf.dispose([values, topValues, topIds, lastRow]);
          }
        }
      } finally {
        hidden.dispose();
      }
    }
    return { logits: last as Float32Array, scores: { logprobs, top } };
  }

  /** Runs `tokens` through a one-row cache in chunks of PREFILL_CHUNK: the logits after the last. */
  private async prefill(cache: KVCache, tokens: number[]): Promise<Float32Array> {
    const chunks = Array.from({ length: Math.ceil(tokens.length / PREFILL_CHUNK) }, (_, i) => tokens.slice(i * PREFILL_CHUNK, (i + 1) * PREFILL_CHUNK));
    const gpu = this.encodedStep(chunks.map((chunk) => chunk.length));
    if (gpu) {
      // Room for the whole prompt at once, so that no chunk's step copies the cache to grow it.
      cache.reserve(tokens.length, { kvHeads: this.model.config.numKvHeads, headDim: this.model.config.headDim });
      chunks.slice(0, -1).forEach((chunk) => gpu.advance(cache, [chunk]));
      return gpu.logits(cache, [chunks[chunks.length - 1]]);
    }
    let logits: tf.Tensor2D | null = null;
    for (const chunk of chunks) {
      logits?.dispose();
      logits = this.model.forward([chunk], { cache, lastOnly: true });
    }
    const values = (await (logits as tf.Tensor2D).data()) as Float32Array;
    (logits as tf.Tensor2D).dispose();
    return values;
  }

  /** Adds `id` with its prefilled one-row cache `own`: in the row of a sequence that left where one is free, else after the others. */
  private place(id: Id, own: KVCache): void {
    this.lastRun = null;
    const free = this.members.indexOf(LEFT);
    if (free >= 0 && this.cache.replaceRow(free, own)) {
      this.members[free] = id;
      return;
    }
    this.dropLeft();
    this.cache.merge(own);
    this.members.push(id);
  }

  /** Drops the rows of the sequences that left, all in one copy of the cache. */
  private dropLeft(): void {
    const left = this.members.flatMap((member, row) => (member === LEFT ? [row] : []));
    if (left.length === 0) return;
    this.cache.removeRows(left);
    this.members = this.members.filter((member) => member !== LEFT);
  }

  /**
   * The members, one a row of the cache, once the rows left over are dropped (before a step): a
   * copy, so that a member leaving while the step runs (the worker shutting down) leaves the
   * step's rows as they were.
   */
  private settled(): Id[] {
    // A step's logits are the last step's no more, nor its tokens the last run's.
    this.lastStep = null;
    this.lastRun = null;
    this.dropLeft();
    return [...this.members] as Id[];
  }

  /** Advances every member by one token; returns each member's logits for the token after it. */
  async step(next: ReadonlyMap<Id, number>): Promise<Map<Id, Float32Array>> {
    // No draws: every member's logits.
    return (await this.stepMixed(next, new Map())) as Map<Id, Float32Array>;
  }

  /**
   * Advances every member by one token and draws each member's next token with its `draws`
   * entry (temperature, uniform draw; no top-k, top-p or logits processor): on webgpu with the
   * fused kernels, on the GPU, only ids and logprobs read back (kernels/sample.ts); elsewhere
   * from the logits, by sampleToken. Same logits and draws, same tokens.
   */
  async stepDrawn(next: ReadonlyMap<Id, number>, draws: ReadonlyMap<Id, RowDraw>): Promise<Map<Id, DrawnToken>> {
    return (await this.stepsDrawn(next, [draws]))[0];
  }

  /**
   * stepDrawn `draws.length` times, each step fed the tokens the step before it drew: step k's
   * tokens drawn with `draws[k]`, the same tokens as that many calls of stepDrawn. With the
   * encoded webgpu step, the drawn tokens stay on the GPU between the steps
   * and each step is submitted before any is read back (WebGpuDecodeStep.stepsDrawn), so
   * neither the GPU nor the host waits for the other in between; elsewhere the steps run one
   * after another. Every member takes every step: a caller whose sequence ended at step k
   * drops what later steps drew for it. On the GPU the run is recorded and submitted before
   * the returned promise is first awaited, and the next can follow it at once (stepsDrawnAfter).
   */
  async stepsDrawn(next: ReadonlyMap<Id, number>, draws: readonly ReadonlyMap<Id, RowDraw>[]): Promise<Map<Id, DrawnToken>[]> {
    const members = this.settled();
    if (members.length === 0) return draws.map(() => new Map());
    this.requireForEvery('stepDrawn()', 'a token', next);
    for (const stepDraws of draws) this.requireForEvery('stepDrawn()', 'a draw', stepDraws);
    const rows = draws.map((stepDraws) => members.map((id) => stepDraws.get(id) as RowDraw));
    const byMember = (drawn: readonly DrawnToken[]) => new Map(members.map((id, row) => [id, drawn[row]]));
    const gpu = this.encodedStep([members.length]);
    if (gpu) {
      const run = gpu.stepsDrawn(this.cache, members.map((id) => next.get(id) as number), rows);
      this.lastRun = { members, step: gpu };
      return (await run).map(byMember);
    }
    const steps: Map<Id, DrawnToken>[] = [];
    let feed = next;
    for (const stepRows of rows) {
      const drawn = await this.forwardDrawn(members, feed, stepRows);
      steps.push(byMember(drawn));
      feed = new Map(members.map((id, row) => [id, drawn[row].id]));
    }
    return steps;
  }

  /**
   * Whether a run can start now from the tokens the last run drew, still on the GPU
   * (stepsDrawnAfter): the batch's last pass was a run on the GPU (stepsDrawn or
   * stepsDrawnAfter), no member has joined or left since, and the model's step has recorded
   * nothing else since (another batch's step, a prompt).
   */
  get continuesOnGpu(): boolean {
    const run = this.lastRun;
    return run !== null && this.encodedStep([run.members.length]) === run.step && run.step.continues(this.cache, run.members.length);
  }

  /**
   * A run as stepsDrawn's, its first step fed the tokens the last run drew without their coming
   * back first (continuesOnGpu): recorded and submitted at once, while the last run may still
   * be on the GPU and its tokens not yet read, so that a caller reading them records the run
   * after meanwhile and the GPU goes from one run to the next without waiting for the host.
   * Its members are the last run's.
   */
  async stepsDrawnAfter(draws: readonly ReadonlyMap<Id, RowDraw>[]): Promise<Map<Id, DrawnToken>[]> {
    const run = this.lastRun;
    if (!run || !this.continuesOnGpu) throw new Error('stepsDrawnAfter() follows a run on the GPU (stepsDrawn), with no member joined or left and no other step since');
    for (const stepDraws of draws) this.requireForEvery('stepsDrawnAfter()', 'a draw', stepDraws);
    const { members, step } = run;
    const drawn = step.stepsDrawn(this.cache, null, draws.map((stepDraws) => members.map((id) => stepDraws.get(id) as RowDraw)));
    return (await drawn).map((tokens) => new Map(members.map((id, row) => [id, tokens[row]])));
  }

  /**
   * Advances every member by one token: a member with a `draws` entry gets its next token drawn
   * with it (as stepDrawn), every other member its logits (as step), for a sampler that needs
   * the whole row (top-k, top-p, top logprobs). With the encoded webgpu step only those
   * members' logits are read back, so a batch of device-drawn rows does not read back the whole
   * batch's logits for the sake of one such member; a drawn member whose sampler refuses its
   * token (a grammar's quick check) asks for its logits after the step (lastLogits).
   */
  async stepMixed(next: ReadonlyMap<Id, number>, draws: ReadonlyMap<Id, RowDraw>): Promise<Map<Id, DrawnToken | Float32Array>> {
    const members = this.settled();
    if (members.length === 0) return new Map();
    this.requireForEvery('step()', 'a token', next);
    const rows = members.map((id) => draws.get(id) ?? null);
    const gpu = this.encodedStep([members.length]);
    if (gpu) {
      const stepped = await gpu.stepMixed(this.cache, members.map((id) => next.get(id) as number), rows);
      if (draws.size > 0) this.lastStep = { members, logits: { step: gpu, encoded: gpu.stepsEncoded } };
      return new Map(members.map((id, row) => [id, stepped[row]]));
    }
    const logits = this.forwardOne(members, next);
    try {
      const values = (await logits.data()) as Float32Array;
      const V = this.model.config.vocabSize;
      // Kept only where a drawn row's sampler may ask for its logits after all.
      if (draws.size > 0) this.lastStep = { members, logits: values };
      return new Map(
        members.map((id, row) => {
          const own = values.slice(row * V, (row + 1) * V);
          const draw = rows[row];
          return [id, draw ? drawOnHost(own, [draw])[0] : own];
        }),
      );
    } finally {
      logits.dispose();
    }
  }

  /**
   * The logits [vocab] that the last stepMixed made for each of `ids`, members it drew a token
   * for: for a sampler that refused that token (a grammar's quick check;
   * SequenceGenerator.acceptChecked) and needs the whole row after all. Read back from the
   * GPU only now, and only while nothing else has run a step of the model since.
   */
  async lastLogits(ids: readonly Id[]): Promise<Map<Id, Float32Array>> {
    const last = this.lastStep;
    if (!last) throw new Error('lastLogits() follows a stepMixed()');
    const rows = ids.map((id) => {
      const row = last.members.indexOf(id);
      if (row < 0) throw new Error(`sequence ${String(id)} took no part in the last step`);
      return row;
    });
    if (last.logits instanceof Float32Array) {
      const { logits } = last;
      const V = this.model.config.vocabSize;
      return new Map(ids.map((id, i) => [id, logits.slice(rows[i] * V, (rows[i] + 1) * V)]));
    }
    // Ascending rows, so that rows next to each other come back in one copy.
    const order = rows.map((row, i) => ({ row, id: ids[i] })).sort((a, b) => a.row - b.row);
    const values = await last.logits.step.stepLogits(order.map((o) => o.row), last.logits.encoded);
    return new Map(order.map((o, i) => [o.id, values[i]]));
  }

  /** One forward step through the model's forward, each member's token drawn from its logits with its row's draw: on the device where it can (drawOnDevice). */
  private async forwardDrawn(members: readonly Id[], next: ReadonlyMap<Id, number>, rows: readonly RowDraw[]): Promise<DrawnToken[]> {
    const logits = this.forwardOne(members, next);
    try {
      return (await drawOnDevice(logits, rows)) ?? drawOnHost((await logits.data()) as Float32Array, rows);
    } finally {
      logits.dispose();
    }
  }

  private requireForEvery(method: string, what: string, given: ReadonlyMap<Id, unknown>): void {
    const missing = this.ids.filter((id) => !given.has(id));
    if (missing.length > 0) throw new Error(`${method} needs ${what} for every member; missing ${missing.map(String).join(', ')}`);
  }

  /** Whether stepsDrawn keeps the drawn tokens on the GPU between its steps (the encoded webgpu step applies), rather than running them one after another. */
  get feedsOnGpu(): boolean {
    return this.encodedStep([this.size]) !== null;
  }

  /**
   * The webgpu step encoded at once (WebGpuDecodeStep) when it applies now to forward passes of
   * each of `passes` tokens, else null: the passes go through the model's forward.
   */
  private encodedStep(passes: readonly number[]): WebGpuDecodeStep | null {
    // The model's step, shared with its other batches.
    const step = WebGpuDecodeStep.for(this.model);
    return step && passes.every((tokens) => step.applies(tokens)) ? step : null;
  }

  /** One forward step of every member (one a row), each fed its `next` token: the logits [members, vocab] after it. */
  private forwardOne(members: readonly Id[], next: ReadonlyMap<Id, number>): tf.Tensor2D {
    return this.model.forward(
      members.map((id) => [next.get(id) as number]),
      { cache: this.cache, lastOnly: true },
    );
  }

  /** How many tokens of a member's prompt were reused from the prompt cache (not prefilled). */
  reusedTokens(id: Id): number {
    return this.reused.get(id) ?? 0;
  }

  /** Removes `id`; its row stays until a join takes it over or the next step drops it (class comment). */
  leave(id: Id): void {
    this.members[this.row(id)] = LEFT;
    this.lastRun = null;
    this.reused.delete(id);
  }

  dispose(): void {
    this.lastStep = null;
    this.lastRun = null;
    this.cache.dispose();
    this.members = [];
    this.reused.clear();
  }

  private row(id: Id): number {
    const row = this.members.indexOf(id);
    if (row < 0) throw new Error(`sequence ${String(id)} is not in the batch`);
    return row;
  }
}

/** sampleToken over each row of logits with the row's draw, what drawOnDevice computes on the GPU. */
function drawOnHost(values: Float32Array, rows: readonly RowDraw[]): DrawnToken[] {
  const V = values.length / rows.length;
  return rows.map(({ temperature, u }, row) => {
    const { id, logprob } = sampleToken(values.subarray(row * V, (row + 1) * V), { temperature }, new FixedDraw(u));
    return { id, logprob };
  });
}

/** A "random" source that returns one given draw: the row's u. */
class FixedDraw extends SeededRandom {
  constructor(private readonly u: number) {
    super(0);
  }

  override next(): number {
    return this.u;
  }
}
