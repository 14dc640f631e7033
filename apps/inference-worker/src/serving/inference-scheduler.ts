import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, InferenceEvent, InferenceWorkItem, ServiceError, Subjects } from '@trainyard/contracts';
import {
  CompiledGrammar,
  DecodeBatch,
  detectToolCallFormat,
  DrawnToken,
  drawOnDeviceAvailable,
  GrammarError,
  JsonGrammarCompiler,
  LoadedModel,
  LoraAttachment,
  LoraRouter,
  PromptCache,
  PromptError,
  RowDraw,
  toolCallSyntax,
  ToolCallSyntax,
} from '@trainyard/engine';
import { EventSubscription, MessageBus } from '@trainyard/messaging';
import { GracefulShutdown, onAbort, WorkerLoad } from '@trainyard/runtime';
import { InferenceWorkerConfig } from '../config/inference-worker.config';
import { AdapterCache } from '../models/adapter-cache';
import { ModelCache } from '../models/model-cache';
import { RunningCompletion } from './completion';
import { grammarRefusal, grammarSpec, toolCallRequest } from './engine-inputs';

/** Longer than any completion stays worth starting (the chat service's deadline). */
const CANCEL_MEMORY_MS = 15 * 60_000;

/**
 * Sequences decoding together: every sequence of one base model, each with its own LoRA
 * adapter (a checkpoint) or none; the router gives each row of a step its adapter.
 */
interface Batch {
  decode: DecodeBatch<string>;
  router: LoraRouter;
  /** The adapter of each sequence in the batch (null: the base model). */
  adapters: Map<string, LoraAttachment | null>;
}

/**
 * Continuous batching: every running sequence of a base model, whatever checkpoint it asked
 * for, advances one token per forward step, together; new completions are admitted and
 * finished ones retired between steps. All batch operations take turns through one lock,
 * because a prefill must never interleave with a step, and the adapters routed to the rows
 * of a shared base model must be those of the pass being run.
 */
@Injectable()
export class InferenceScheduler implements OnModuleDestroy {
  private readonly logger = new Logger(InferenceScheduler.name);
  private readonly running = new Map<string, RunningCompletion>();
  private readonly batches = new Map<string, Batch>();
  private readonly grammars = new WeakMap<LoadedModel, Promise<JsonGrammarCompiler>>();
  /** The token each live sequence feeds into the next step. */
  private readonly pending = new Map<string, number>();
  /** Sequences of completions taken from the queue and not decoding yet (loading weights, waiting for the lock, prefilling). */
  private admitting = 0;
  private readonly heldListeners: (() => void)[] = [];
  private turn: Promise<unknown> = Promise.resolve();
  private looping = false;
  private slotWaiters: (() => void)[] = [];
  private stopping = false;
  /** Completions cancelled while still queued, by when they were cancelled: never start them. */
  private readonly cancelledEarly = new Map<string, number>();
  /** Each admitted completion holds off shutdown until it is retired. */
  private readonly holds = new Map<string, () => void>();
  /** The liveness subscription of each completion this worker holds, from acceptance to release. */
  private readonly liveness = new Map<string, EventSubscription>();
  /** Prefilled prompts of every loaded model, for the next prompt that begins the same way. */
  private readonly prompts: PromptCache | null;

  constructor(
    @Inject(InferenceWorkerConfig) private readonly config: InferenceWorkerConfig,
    private readonly bus: MessageBus,
    private readonly models: ModelCache,
    private readonly adapters: AdapterCache,
    private readonly load: WorkerLoad,
    private readonly shutdown: GracefulShutdown,
  ) {
    load.slots = config.MAX_BATCH_SEQUENCES;
    this.prompts = config.PROMPT_CACHE_MB > 0 ? new PromptCache(config.PROMPT_CACHE_MB * 2 ** 20) : null;
    models.onUnload((lm) => this.prompts?.clear(lm.model));
    // Shutdown lets running completions finish for SHUTDOWN_DRAIN_MS, then they fail clearly.
    onAbort(shutdown.expired, () => void this.exclusive(async () => this.failRunning()));
  }

  /** Sequences this worker holds: decoding, or taken from the queue and on their way in. */
  get heldSequences(): number {
    return this.pending.size + this.admitting;
  }

  get freeSlots(): number {
    return this.config.MAX_BATCH_SEQUENCES - this.heldSequences;
  }

  /** Calls `listener` whenever heldSequences may have changed. */
  onHeldChange(listener: () => void): void {
    this.heldListeners.push(listener);
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
    // Redelivered while this worker still has it (a stall longer than the ack wait): run it once.
    if (this.liveness.has(item.completion_id)) return;
    // Its sequences count as admitting until each one decodes (or is done): never both at once.
    const admission = { admitting: item.params.n };
    this.admitting += admission.admitting;
    this.heldChanged();
    try {
      await this.start(item, admission);
    } finally {
      this.admitting -= admission.admitting;
      this.heldChanged();
    }
  }

  /** Takes a completion from the queue to its first tokens: accept, load, compile, render, prefill. */
  private async start(item: InferenceWorkItem, admission: { admitting: number }): Promise<void> {
    const emit = this.accept(item);
    const weights = await this.loadWeights(item, emit);
    if (!weights) return;
    const toolSyntax = this.toolSyntax(weights.lm, item);
    const grammar = await this.prepareGrammar(weights.lm, item, toolSyntax, emit);
    if (grammar === undefined) return;
    await this.exclusive(async () => {
      const completion = this.open(item, weights.lm, grammar, toolSyntax, emit);
      if (completion) await this.prefill(completion, weights.adapter, admission);
      this.retireFinished();
    });
    this.startLoop();
  }

  /**
   * Holds off shutdown for the completion and starts answering its liveness subject, before the
   * first event goes out: from then on the gateway can tell a completion that is slow from one
   * whose worker is gone (no responders). Returns how the completion's events are sent.
   */
  private accept(item: InferenceWorkItem): (event: InferenceEvent) => void {
    this.holds.set(item.completion_id, this.shutdown.hold());
    let seq = 0;
    const emit = (event: InferenceEvent) => this.bus.publishTo(Subjects.chat.completionEvents, item.reply_subject, { ...event, seq: seq++ });
    this.liveness.set(item.completion_id, this.bus.answerProbes(Subjects.inference.completionAlive, { suffix: item.completion_id }));
    emit({ type: 'accepted' });
    return emit;
  }

  /** The base model and the checkpoint's adapter, or null once the failure has been told. */
  private async loadWeights(item: InferenceWorkItem, emit: Emit): Promise<{ lm: LoadedModel; adapter: LoraAttachment | null } | null> {
    try {
      const lm = await this.models.acquire(item.base_model_dir);
      const adapter = item.adapter ? await this.adapters.acquire(lm, item.adapter) : null;
      return { lm, adapter };
    } catch (err) {
      this.release(item);
      this.logger.error(`cannot load weights for ${item.completion_id}: ${(err as Error).message}`);
      emit(errorEvent(ErrorCode.Unavailable, `The weights of ${item.params.model} could not be loaded on this worker`));
      return null;
    }
  }

  /** The compiled grammar (null: free text), or undefined once the failure has been told. */
  private async prepareGrammar(
    lm: LoadedModel,
    item: InferenceWorkItem,
    toolSyntax: ToolCallSyntax | null,
    emit: Emit,
  ): Promise<CompiledGrammar | null | undefined> {
    try {
      return await this.compileGrammar(lm, item, toolSyntax);
    } catch (err) {
      this.release(item);
      if (err instanceof GrammarError) emit(grammarErrorEvent(err));
      else {
        this.logger.error(`grammar failed: ${(err as Error).stack}`);
        emit(errorEvent(ErrorCode.Internal, 'Constrained decoding failed', toolSyntax ? 'tools' : 'response_format'));
      }
      return undefined;
    }
  }

  /** The running completion with its rendered prompt, or null once the refusal has been told. */
  private open(item: InferenceWorkItem, lm: LoadedModel, grammar: CompiledGrammar | null, toolSyntax: ToolCallSyntax | null, emit: Emit): RunningCompletion | null {
    try {
      const { promptIds, maxTokens } = this.prompt(lm, item);
      const completion = new RunningCompletion(item, lm, promptIds, maxTokens, emit, grammar, toolSyntax);
      this.running.set(completion.id, completion);
      return completion;
    } catch (err) {
      this.release(item);
      // The refusals the chat service makes before queueing (a prompt the template cannot
      // render or the window cannot hold), and a GrammarError: max_tokens too small for the grammar.
      if (err instanceof ServiceError) emit(errorEvent(err.code, err.message, err.details.param));
      else if (err instanceof PromptError) emit(errorEvent(ErrorCode.InvalidRequest, err.message, 'messages'));
      else if (err instanceof GrammarError) emit(grammarErrorEvent(err));
      else {
        this.logger.error(`cannot open ${item.completion_id}: ${(err as Error).stack}`);
        emit(errorEvent(ErrorCode.Internal, 'Generation failed on the inference worker'));
      }
      return null;
    }
  }

  /** Prefills each choice into the batch of its base model and samples its first token. */
  private async prefill(completion: RunningCompletion, adapter: LoraAttachment | null, admission: { admitting: number }): Promise<void> {
    const { item } = completion;
    const batch = this.batchFor(item, completion.lm);
    batch.router.route([adapter]);
    // A prompt's keys and values depend on the adapter it was prefilled with.
    const reuse = this.prompts ? { cache: this.prompts, namespace: item.adapter ? AdapterCache.key(item.adapter) : '' } : undefined;
    try {
      for (let i = 0; i < item.params.n; i++) {
        const key = completion.sequenceKey(i);
        const logits = await batch.decode.join(key, completion.promptIds, reuse);
        // The prompt is counted once, like prompt_tokens: what its first choice did not prefill.
        if (i === 0) completion.cachedTokens = batch.decode.reusedTokens(key);
        const next = completion.advance(i, logits);
        if (next === null) batch.decode.leave(key);
        else {
          this.pending.set(key, next);
          batch.adapters.set(key, adapter);
        }
        admission.admitting--;
        this.admitting--;
      }
    } catch (err) {
      // The prefill failed (out of memory, say): this completion ends with an error, the batch goes on.
      this.logger.error(`prefill failed for ${completion.id}: ${(err as Error).stack ?? (err as Error).message}`);
      completion.fail(errorEvent(ErrorCode.Internal, 'Generation failed on the inference worker'));
      completion.abandon();
    }
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

  /**
   * The rendered prompt, and the tokens it leaves to generate: never past the context window
   * (the choice then ends with "length"). The chat service refuses a prompt that does not fit
   * before queueing it, counting it with the same ChatPrompt; this check is a defence only.
   */
  private prompt(lm: LoadedModel, item: InferenceWorkItem): { promptIds: number[]; maxTokens: number } {
    const { messages, tools, max_tokens } = item.params;
    const promptIds = lm.prompt.encode(messages, tools);
    const maxTokens = lm.prompt.room(promptIds.length, max_tokens);
    if (maxTokens < 1) {
      this.logger.warn(`${item.completion_id} reached the worker too long for the context window: chat could not count its prompt (can it read ${item.base_model_dir}?)`);
      throw ServiceError.contextLengthExceeded(lm.prompt.contextWindow, promptIds.length, tools !== null);
    }
    return { promptIds, maxTokens };
  }

  private batchFor(item: InferenceWorkItem, lm: LoadedModel): Batch {
    const key = item.base_model_dir;
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { decode: new DecodeBatch<string>(lm.model), router: new LoraRouter(lm.model), adapters: new Map() };
      this.batches.set(key, batch);
    }
    return batch;
  }

  /**
   * The tool-call syntax of the model's template when the reply may hold calls: tools given
   * and tool_choice not "none" (the tools are then only described), unless "auto" meets a
   * JSON response_format, whose grammar then decides the reply alone.
   */
  private toolSyntax(lm: LoadedModel, item: InferenceWorkItem): ToolCallSyntax | null {
    const { tools, tool_choice, response_format } = item.params;
    if (!tools || tool_choice === 'none' || (tool_choice === 'auto' && response_format.type !== 'text')) return null;
    return toolCallSyntax(lm.chatTemplate ? detectToolCallFormat(lm.chatTemplate.source) : 'none');
  }

  private async compileGrammar(lm: LoadedModel, item: InferenceWorkItem, toolSyntax: ToolCallSyntax | null): Promise<CompiledGrammar | null> {
    const { tools, tool_choice, response_format } = item.params;
    if (!toolSyntax || !tools || tool_choice === 'none') {
      const spec = grammarSpec(response_format);
      return spec ? (await this.grammarFor(lm)).compile(spec) : null;
    }
    return (await this.grammarFor(lm)).compileToolCalls(toolCallRequest(item.params, toolSyntax));
  }

  private grammarFor(lm: LoadedModel): Promise<JsonGrammarCompiler> {
    let compiler = this.grammars.get(lm);
    if (!compiler) {
      compiler = JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
      this.grammars.set(lm, compiler);
    }
    return compiler;
  }

  /** Lets go of the weights a completion held, of its hold on shutdown, and stops answering for it. */
  private release(item: InferenceWorkItem): void {
    this.models.release(item.base_model_dir);
    if (item.adapter) this.adapters.release(item.adapter);
    this.holds.get(item.completion_id)?.();
    this.holds.delete(item.completion_id);
    this.liveness.get(item.completion_id)?.unsubscribe();
    this.liveness.delete(item.completion_id);
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
    batch.router.route(batch.decode.ids.map((key) => batch.adapters.get(key) ?? null));
    const feed = new Map(batch.decode.ids.map((key) => [key, this.pending.get(key) as number]));
    const draws = this.deviceDraws(batch);
    let outcome: Map<string, Float32Array> | Map<string, DrawnToken>;
    try {
      outcome = draws ? await batch.decode.stepDrawn(feed, draws) : await batch.decode.step(feed);
    } catch (err) {
      this.failBatch(batch, err as Error);
      return;
    }
    for (const [key, value] of outcome) {
      const { completion, index } = this.locate(key);
      if (!completion || completion.cancelled) continue;
      const next = value instanceof Float32Array ? completion.advance(index, value) : completion.advanceDrawn(index, value);
      if (next === null) {
        this.leave(batch, key);
        this.pending.delete(key);
      } else {
        this.pending.set(key, next);
      }
    }
    this.retireFinished();
  }

  /**
   * Each sequence's draw for its next token when the whole batch can draw on the device (webgpu
   * with the fused kernels, and no sequence needing its logits for top-k, top-p, a grammar or
   * top logprobs): only token ids and logprobs are then read back. Null otherwise: the step
   * reads the logits back and each sequence samples from its own.
   */
  private deviceDraws(batch: Batch): Map<string, RowDraw> | null {
    if (!drawOnDeviceAvailable()) return null;
    const rows = batch.decode.ids.map((key) => ({ key, ...this.locate(key) }));
    const live = rows.filter((r) => r.completion && !r.completion.cancelled);
    if (!live.every((r) => r.completion?.drawsWithoutLogits(r.index))) return null;
    // A cancelled sequence still in the batch gets a greedy draw; its token is dropped.
    return new Map(rows.map((r) => [r.key, r.completion && !r.completion.cancelled ? r.completion.draw(r.index) : { temperature: 0, u: 0 }]));
  }

  /** Removes finished and cancelled completions, their sequences and their hold on the model. */
  private retireFinished(): void {
    for (const completion of [...this.running.values()]) {
      if (!completion.done && !completion.cancelled) continue;
      const batch = this.batches.get(completion.item.base_model_dir);
      for (let i = 0; i < completion.generators.length; i++) {
        const key = completion.sequenceKey(i);
        if (batch?.decode.has(key)) this.leave(batch, key);
        this.pending.delete(key);
      }
      this.running.delete(completion.id);
      this.release(completion.item);
    }
    // An empty batch holds a KV cache and its adapters' stacked factors: drop it.
    for (const [key, batch] of this.batches) {
      if (batch.decode.size > 0) continue;
      this.disposeBatch(batch);
      this.batches.delete(key);
    }
    this.heldChanged();
  }

  private heldChanged(): void {
    this.load.active = this.heldSequences;
    for (const listener of this.heldListeners) listener();
    while (this.freeSlots > 0 && this.slotWaiters.length > 0) this.slotWaiters.shift()?.();
  }

  private leave(batch: Batch, key: string): void {
    batch.decode.leave(key);
    batch.adapters.delete(key);
  }

  private disposeBatch(batch: Batch): void {
    batch.router.dispose();
    batch.decode.dispose();
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

  /** Ends every running completion with an error its client sees. */
  private failRunning(): void {
    for (const completion of this.running.values()) {
      completion.fail(errorEvent(ErrorCode.Unavailable, 'The inference worker is shutting down; retry the request'));
      completion.abandon();
    }
    this.retireFinished();
  }

  onModuleDestroy(): void {
    this.failRunning();
    for (const batch of this.batches.values()) this.disposeBatch(batch);
    this.batches.clear();
    this.prompts?.clear();
  }
}

type Emit = (event: InferenceEvent) => void;

function errorEvent(code: ErrorCode, message: string, param?: string): InferenceEvent & { type: 'error' } {
  return { type: 'error', error: { code, message, details: param ? { param } : {} } };
}

function grammarErrorEvent(err: GrammarError): InferenceEvent & { type: 'error' } {
  const { message, param } = grammarRefusal(err);
  return errorEvent(ErrorCode.InvalidRequest, message, param);
}
