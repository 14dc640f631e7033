import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, InferenceEvent, InferenceWorkItem, ServiceError } from '@trainyard/contracts';
import {
  CompiledGrammar,
  DecodeBatch,
  detectToolCallFormat,
  GrammarError,
  JsonGrammarCompiler,
  LlamaModel,
  LoadedModel,
  LoraAttachment,
} from '@trainyard/engine';
import { NATS_CONNECTION } from '@trainyard/messaging';
import { WorkerLoad } from '@trainyard/runtime';
import { JSONCodec, NatsConnection } from 'nats';
import { InferenceWorkerConfig } from '../config/inference-worker.config';
import { AdapterCache } from '../models/adapter-cache';
import { ModelCache } from '../models/model-cache';
import { renderPrompt, RunningCompletion } from './completion';

const events = JSONCodec<InferenceEvent>();
/** Longer than any completion stays worth starting (the chat service's deadline). */
const CANCEL_MEMORY_MS = 15 * 60_000;

/** Sequences decoding together: one base model with one adapter (or none). */
interface Batch {
  key: string;
  decode: DecodeBatch<string>;
  model: LlamaModel;
  adapter: LoraAttachment | null;
}

/**
 * Continuous batching: every running sequence of a base model and adapter advances one
 * token per forward step, together; new completions are admitted and finished ones
 * retired between steps. All batch operations take turns through one lock, because a
 * prefill must never interleave with a step, and the adapter attached to a shared base
 * model must be the one of the batch being stepped.
 */
@Injectable()
export class InferenceScheduler implements OnModuleDestroy {
  private readonly logger = new Logger(InferenceScheduler.name);
  private readonly running = new Map<string, RunningCompletion>();
  private readonly batches = new Map<string, Batch>();
  /** The adapter currently attached to each loaded base model (null: none). */
  private readonly attached = new Map<LlamaModel, LoraAttachment | null>();
  private readonly grammars = new WeakMap<LoadedModel, Promise<JsonGrammarCompiler>>();
  /** The token each live sequence feeds into the next step. */
  private readonly pending = new Map<string, number>();
  private turn: Promise<unknown> = Promise.resolve();
  private looping = false;
  private slotWaiters: (() => void)[] = [];
  private stopping = false;
  /** Completions cancelled while still queued, by when they were cancelled: never start them. */
  private readonly cancelledEarly = new Map<string, number>();

  constructor(
    @Inject(InferenceWorkerConfig) private readonly config: InferenceWorkerConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly models: ModelCache,
    private readonly adapters: AdapterCache,
    private readonly load: WorkerLoad,
  ) {
    load.slots = config.MAX_BATCH_SEQUENCES;
  }

  get activeSequences(): number {
    return this.pending.size;
  }

  get freeSlots(): number {
    return this.config.MAX_BATCH_SEQUENCES - this.pending.size;
  }

  /** Resolves once a slot is free (immediately if one is), or when the worker is stopping. */
  whenSlotFree(): Promise<void> {
    if (this.freeSlots > 0 || this.stopping) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  /** Releases anyone waiting for a slot: the worker is shutting down. */
  stopAdmitting(): void {
    this.stopping = true;
    for (const wake of this.slotWaiters.splice(0)) wake();
  }

  /** Prefills a new completion into the batch of its model and starts decoding it. */
  async admit(item: InferenceWorkItem): Promise<void> {
    if (this.cancelledEarly.delete(item.completion_id)) return;
    const emit = (event: InferenceEvent) => this.nc.publish(item.reply_subject, events.encode(event));
    let lm: LoadedModel;
    let adapter: LoraAttachment | null = null;
    try {
      lm = await this.models.acquire(item.base_model_dir);
      if (item.adapter) adapter = await this.adapters.acquire(lm, item.adapter);
    } catch (err) {
      this.release(item);
      this.logger.error(`cannot load weights for ${item.completion_id}: ${(err as Error).message}`);
      emit(errorEvent(ErrorCode.Unavailable, `The weights of ${item.params.model} could not be loaded on this worker`));
      return;
    }
    let grammar: CompiledGrammar | null;
    try {
      grammar = await this.grammarFor(lm).then((compiler) => compiler.compile(item.params.response_format));
    } catch (err) {
      this.release(item);
      const invalid = err instanceof GrammarError;
      if (!invalid) this.logger.error(`grammar failed: ${(err as Error).stack}`);
      emit(errorEvent(invalid ? ErrorCode.InvalidRequest : ErrorCode.Internal, invalid ? (err as Error).message : 'JSON mode failed', 'response_format'));
      return;
    }
    await this.exclusive(async () => {
      let completion: RunningCompletion;
      try {
        const toolFormat = lm.chatTemplate ? detectToolCallFormat(lm.chatTemplate.source) : 'none';
        completion = new RunningCompletion(item, lm, this.prompt(lm, item), emit, grammar, toolFormat);
      } catch (err) {
        this.release(item);
        emit(errorEvent(err instanceof ServiceError ? err.code : ErrorCode.InvalidRequest, (err as Error).message));
        return;
      }
      this.running.set(completion.id, completion);
      const batch = this.batchFor(item, lm, adapter);
      this.useWeights(batch);
      for (let i = 0; i < item.params.n; i++) {
        const key = completion.sequenceKey(i);
        const next = completion.advance(i, await batch.decode.join(key, completion.promptIds));
        if (next === null) batch.decode.leave(key);
        else this.pending.set(key, next);
      }
      this.retireFinished();
    });
    this.startLoop();
  }

  /** The client went away: stop generating for it at the next step boundary. */
  cancel(completionId: string): void {
    const completion = this.running.get(completionId);
    if (!completion) {
      this.rememberEarlyCancel(completionId);
      return;
    }
    this.logger.log(`cancelling ${completionId}: its client went away`);
    completion.abandon();
    void this.exclusive(async () => this.retireFinished());
  }

  private rememberEarlyCancel(completionId: string): void {
    const now = Date.now();
    this.cancelledEarly.set(completionId, now);
    // Every worker hears every cancel; forget those old enough that their work has expired.
    for (const [id, at] of this.cancelledEarly) {
      if (now - at < CANCEL_MEMORY_MS) break;
      this.cancelledEarly.delete(id);
    }
  }

  private prompt(lm: LoadedModel, item: InferenceWorkItem): number[] {
    const prompt = renderPrompt(lm, item);
    const window = lm.config.maxPositionEmbeddings;
    if (prompt.length + 1 > window) {
      throw ServiceError.invalid(
        `The prompt is ${prompt.length} tokens long; ${item.base_model} has a context window of ${window} tokens`,
        'messages',
      );
    }
    // Never generate past the context window: the choice ends with finish_reason "length".
    item.params.max_tokens = Math.min(item.params.max_tokens, window - prompt.length);
    return prompt;
  }

  private batchFor(item: InferenceWorkItem, lm: LoadedModel, adapter: LoraAttachment | null): Batch {
    const key = batchKey(item);
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { key, decode: new DecodeBatch<string>(lm.model), model: lm.model, adapter };
      this.batches.set(key, batch);
    }
    return batch;
  }

  /** Attaches the batch's adapter to its base model (detaching another batch's) before it runs. */
  private useWeights(batch: Batch): void {
    const current = this.attached.get(batch.model) ?? null;
    if (current === batch.adapter) return;
    current?.detach();
    batch.adapter?.reattach();
    this.attached.set(batch.model, batch.adapter);
  }

  private grammarFor(lm: LoadedModel): Promise<JsonGrammarCompiler> {
    let compiler = this.grammars.get(lm);
    if (!compiler) {
      compiler = JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
      this.grammars.set(lm, compiler);
    }
    return compiler;
  }

  /** Lets go of the weights a completion held. */
  private release(item: InferenceWorkItem): void {
    this.models.release(item.base_model_dir);
    if (item.adapter) this.adapters.release(item.adapter);
  }

  private startLoop(): void {
    if (this.looping || this.pending.size === 0) return;
    this.looping = true;
    void this.loop().finally(() => {
      this.looping = false;
      this.startLoop();
    });
  }

  private async loop(): Promise<void> {
    while (this.pending.size > 0) {
      for (const batch of this.batches.values()) {
        await this.exclusive(() => this.step(batch));
      }
      // Let NATS deliver cancellations and new work between steps.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private async step(batch: Batch): Promise<void> {
    if (batch.decode.size === 0) return;
    this.useWeights(batch);
    const feed = new Map(batch.decode.ids.map((key) => [key, this.pending.get(key) as number]));
    let logits: Map<string, Float32Array>;
    try {
      logits = await batch.decode.step(feed);
    } catch (err) {
      this.failBatch(batch, err as Error);
      return;
    }
    for (const [key, values] of logits) {
      const { completion, index } = this.locate(key);
      if (!completion || completion.cancelled) continue;
      const next = completion.advance(index, values);
      if (next === null) {
        batch.decode.leave(key);
        this.pending.delete(key);
      } else {
        this.pending.set(key, next);
      }
    }
    this.retireFinished();
  }

  /** Removes finished and cancelled completions, their sequences and their hold on the model. */
  private retireFinished(): void {
    for (const completion of [...this.running.values()]) {
      if (!completion.done && !completion.cancelled) continue;
      const batch = this.batches.get(batchKey(completion.item));
      for (let i = 0; i < completion.generators.length; i++) {
        const key = completion.sequenceKey(i);
        if (batch?.decode.has(key)) batch.decode.leave(key);
        this.pending.delete(key);
      }
      this.running.delete(completion.id);
      this.release(completion.item);
    }
    // An empty batch holds a KV cache and pins its adapter: drop it.
    for (const [key, batch] of this.batches) {
      if (batch.decode.size > 0) continue;
      batch.decode.dispose();
      this.batches.delete(key);
    }
    this.load.active = this.pending.size;
    while (this.freeSlots > 0 && this.slotWaiters.length > 0) this.slotWaiters.shift()?.();
  }

  private failBatch(batch: Batch, err: Error): void {
    this.logger.error(`decode step failed: ${err.stack ?? err.message}`);
    for (const key of [...batch.decode.ids]) {
      const { completion } = this.locate(key);
      if (completion && !completion.cancelled) {
        completion.fail(errorEvent(ErrorCode.Internal, 'Generation failed on the inference worker'));
        completion.abandon();
      }
    }
    this.retireFinished();
  }

  private locate(key: string): { completion: RunningCompletion | undefined; index: number } {
    const hash = key.lastIndexOf('#');
    return { completion: this.running.get(key.slice(0, hash)), index: Number(key.slice(hash + 1)) };
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.turn.then(fn);
    this.turn = result.catch(() => undefined);
    return result;
  }

  onModuleDestroy(): void {
    for (const completion of this.running.values()) {
      completion.fail(errorEvent(ErrorCode.Unavailable, 'The inference worker is shutting down'));
      completion.abandon();
    }
    this.retireFinished();
    for (const batch of this.batches.values()) batch.decode.dispose();
    this.batches.clear();
  }
}

function errorEvent(code: ErrorCode, message: string, param?: string): InferenceEvent & { type: 'error' } {
  return { type: 'error', error: { code, message, details: param ? { param } : {} } };
}

function batchKey(item: InferenceWorkItem): string {
  return item.adapter ? `${item.base_model_dir}|${AdapterCache.key(item.adapter)}` : item.base_model_dir;
}
