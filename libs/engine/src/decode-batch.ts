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

/**
 * Sequences decoding together: the unit continuous batching is built on. Each sequence joins
 * with its prompt (prefilled alone, then merged into the shared KV cache), advances one token
 * per step() together with every other member in one forward pass, and leaves when done.
 * Members can join and leave between any two steps.
 */
export class DecodeBatch<Id = string> {
  private readonly cache: KVCache;
  /** Row of the cache for each member, in cache order. */
  private members: Id[] = [];
  /** Per member, the tokens of its prompt that were reused instead of prefilled. */
  private readonly reused = new Map<Id, number>();
  /** The whole step encoded at once on webgpu; undefined until the first step asks, null where it does not apply. */
  private gpuStep: WebGpuDecodeStep | null | undefined = undefined;

  constructor(readonly model: LlamaModel) {
    this.cache = model.newCache();
  }

  get size(): number {
    return this.members.length;
  }

  get ids(): readonly Id[] {
    return this.members;
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
      this.cache.merge(own);
      this.members.push(id);
      this.reused.set(id, hit?.length ?? 0);
      return values;
    } finally {
      own.dispose();
    }
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

  /** Advances every member by one token; returns each member's logits for the token after it. */
  async step(next: ReadonlyMap<Id, number>): Promise<Map<Id, Float32Array>> {
    if (this.members.length === 0) return new Map();
    this.requireForEvery('step()', 'a token', next);
    const V = this.model.config.vocabSize;
    const gpu = this.encodedStep([this.members.length]);
    let values: Float32Array;
    if (gpu) {
      values = await gpu.logits(this.cache, this.members.map((id) => [next.get(id) as number]));
    } else {
      const logits = this.forwardOne(next);
      values = (await logits.data()) as Float32Array;
      logits.dispose();
    }
    return new Map(this.members.map((id, row) => [id, values.slice(row * V, (row + 1) * V)]));
  }

  /**
   * Advances every member by one token and draws each member's next token with its `draws`
   * entry (temperature, uniform draw; no top-k, top-p or logits processor): on webgpu with the
   * fused kernels, on the GPU, only ids and logprobs read back (kernels/sample.ts); elsewhere
   * from the logits, by sampleToken. Same logits and draws, same tokens.
   */
  async stepDrawn(next: ReadonlyMap<Id, number>, draws: ReadonlyMap<Id, RowDraw>): Promise<Map<Id, DrawnToken>> {
    if (this.members.length === 0) return new Map();
    this.requireForEvery('stepDrawn()', 'a token', next);
    this.requireForEvery('stepDrawn()', 'a draw', draws);
    const rows = this.members.map((id) => draws.get(id) as RowDraw);
    const gpu = this.encodedStep([this.members.length]);
    if (gpu) {
      const drawn = await gpu.stepDrawn(this.cache, this.members.map((id) => next.get(id) as number), rows);
      return new Map(this.members.map((id, row) => [id, drawn[row]]));
    }
    const logits = this.forwardOne(next);
    try {
      const drawn = (await drawOnDevice(logits, rows)) ?? drawOnHost((await logits.data()) as Float32Array, rows);
      return new Map(this.members.map((id, row) => [id, drawn[row]]));
    } finally {
      logits.dispose();
    }
  }

  private requireForEvery(method: string, what: string, given: ReadonlyMap<Id, unknown>): void {
    const missing = this.members.filter((id) => !given.has(id));
    if (missing.length > 0) throw new Error(`${method} needs ${what} for every member; missing ${missing.map(String).join(', ')}`);
  }

  /**
   * The webgpu step encoded at once (WebGpuDecodeStep) when it applies now to forward passes of
   * each of `passes` tokens, else null: the passes go through the model's forward.
   */
  private encodedStep(passes: readonly number[]): WebGpuDecodeStep | null {
    if (this.gpuStep === undefined) this.gpuStep = WebGpuDecodeStep.for(this.model);
    const step = this.gpuStep;
    return step && passes.every((tokens) => step.applies(tokens)) ? step : null;
  }

  /** One forward step of every member, each fed its `next` token: the logits [members, vocab] after it. */
  private forwardOne(next: ReadonlyMap<Id, number>): tf.Tensor2D {
    return this.model.forward(
      this.members.map((id) => [next.get(id) as number]),
      { cache: this.cache, lastOnly: true },
    );
  }

  /** How many tokens of a member's prompt were reused from the prompt cache (not prefilled). */
  reusedTokens(id: Id): number {
    return this.reused.get(id) ?? 0;
  }

  leave(id: Id): void {
    const row = this.row(id);
    this.cache.removeRow(row);
    this.members.splice(row, 1);
    this.reused.delete(id);
  }

  dispose(): void {
    this.gpuStep?.dispose();
    this.gpuStep = undefined;
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
