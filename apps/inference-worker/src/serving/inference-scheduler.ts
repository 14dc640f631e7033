import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, InferenceEvent, InferenceWork, InferenceWorkItem, InferenceWorkRouting, ServiceError, Subjects, TokenSampleEvent, TokenSampleWorkItem } from '@trainyard/contracts';
import { CompiledGrammar, GrammarError, LoadedModel, LoraAttachment, ModelLoadError, PromptCache, PromptError, ToolCallSyntax } from '@trainyard/engine';
import { MessageBus } from '@trainyard/messaging';
import { GracefulShutdown, onAbort, WorkerLoad } from '@trainyard/runtime';
import { InferenceWorkerConfig } from '../config/inference-worker.config';
import { AdapterCache } from '../models/adapter-cache';
import { ModelCache } from '../models/model-cache';
import { RunningCompletion } from './completion';
import type { DecodingWork } from './decoding-work';
import { CompletionGrammars } from './completion-grammars';
import { CompletionHolds } from './completion-holds';
import { DecodeBatches } from './decode-batches';
import { EarlyCancels } from './early-cancels';
import { ErrorEvent, errorEvent, grammarErrorEvent } from './inference-events';
import { Admission, SlotLedger } from './slot-ledger';
import { RunningSampling } from './token-sampling';

type Emit = (event: InferenceEvent) => void;

/**
 * Continuous batching: every running sequence of a base model, whatever checkpoint it asked
 * for, advances one token per forward step, together; new completions are admitted and
 * finished ones retired between steps. All batch operations take turns through one lock,
 * because a prefill must never interleave with a step (DecodeBatches).
 *
 * The parts: SlotLedger counts held sequences against MAX_BATCH_SEQUENCES, CompletionHolds
 * keeps each accepted completion's shutdown hold and liveness answer, EarlyCancels remembers
 * completions cancelled before they decode, CompletionGrammars compiles what constrains a reply,
 * DecodeBatches runs the batches. This class takes a completion through them and retires it.
 * A token sampling (RunningSampling) takes the same way, without the grammar and the chat
 * template, and answers with one result event instead of a stream.
 */
@Injectable()
export class InferenceScheduler implements OnModuleDestroy {
  private readonly logger = new Logger(InferenceScheduler.name);
  /** Chat completions and token samplings decoding on this worker, by id. */
  private readonly running = new Map<string, DecodingWork>();
  private readonly batches: DecodeBatches;
  private readonly slots: SlotLedger;
  private readonly holds: CompletionHolds;
  private readonly cancels = new EarlyCancels();
  private readonly grammars = new CompletionGrammars();
  private readonly prompts: PromptCache | null;
  private turn: Promise<unknown> = Promise.resolve();
  private looping = false;
  /** Steps a batch runs between readbacks where its tokens stay on the GPU (DECODE_RUN_STEPS). */
  private readonly runSteps: number;
  /** Whether a batch's next run is submitted before the last is read back (DECODE_RUN_AHEAD). */
  private readonly runAhead: boolean;

  constructor(
    @Inject(InferenceWorkerConfig) config: InferenceWorkerConfig,
    private readonly bus: MessageBus,
    private readonly models: ModelCache,
    private readonly adapters: AdapterCache,
    load: WorkerLoad,
    shutdown: GracefulShutdown,
  ) {
    this.runSteps = config.DECODE_RUN_STEPS;
    this.runAhead = config.DECODE_RUN_AHEAD;
    this.prompts = config.PROMPT_CACHE_MB > 0 ? new PromptCache(config.PROMPT_CACHE_MB * 2 ** 20) : null;
    this.batches = new DecodeBatches(this.prompts);
    this.slots = new SlotLedger(config.MAX_BATCH_SEQUENCES, load, () => this.batches.decoding);
    this.holds = new CompletionHolds(bus, shutdown);
    models.onUnload((lm) => this.prompts?.clear(lm.model));
    // Shutdown lets running completions finish for SHUTDOWN_DRAIN_MS, then they fail clearly.
    onAbort(shutdown.expired, () => void this.exclusive(async () => this.failRunning()));
  }

  /** Sequences this worker holds: decoding, or taken from the queue and on their way in. */
  get heldSequences(): number {
    return this.slots.held;
  }

  get freeSlots(): number {
    return this.slots.free;
  }

  /** Calls `listener` whenever heldSequences may have changed. */
  onHeldChange(listener: () => void): void {
    this.slots.onChange(listener);
  }

  /** Resolves once a slot is free (immediately if one is), or when the worker is stopping. */
  whenSlotFree(): Promise<void> {
    return this.slots.whenFree();
  }

  /** Releases anyone waiting for a slot: the worker is shutting down. */
  stopAdmitting(): void {
    this.slots.stop();
  }

  /** Prefills a new completion (or token sampling) into the batch of its model and starts decoding it. */
  async admit(item: InferenceWork): Promise<void> {
    if (this.cancels.take(item.completion_id)) return;
    // Redelivered while this worker still has it (a stall longer than the ack wait): run it once.
    if (this.holds.has(item.completion_id)) return;
    // Its sequences are held from now until each one decodes (or is done).
    const admission = this.slots.admit(item.kind === 'sample_tokens' ? item.num_samples : item.params.n);
    try {
      if (item.kind === 'sample_tokens') await this.startSampling(item, admission);
      else await this.start(item, admission);
    } finally {
      admission.close();
    }
  }

  /** The client went away: stop generating for it at the next step boundary, or before it starts. */
  cancel(completionId: string): void {
    const completion = this.running.get(completionId);
    if (!completion) {
      // Queued, or taken and still loading: start() finds the cancel before it prefills.
      this.cancels.remember(completionId);
      return;
    }
    this.logger.log(`cancelling ${completionId}: its client went away`);
    completion.abandon();
    void this.exclusive(async () => this.retireFinished());
  }

  onModuleDestroy(): void {
    this.failRunning();
    this.batches.dispose();
    this.prompts?.clear();
  }

  /** Takes a completion from the queue to its first tokens: accept, load, compile, render, prefill. */
  private async start(item: InferenceWorkItem, admission: Admission): Promise<void> {
    // From here on the completion holds off shutdown and answers its liveness subject, before
    // the first event goes out: the gateway can then tell a slow completion from a lost one.
    this.holds.take(item.completion_id);
    const emit = this.emitter(item);
    emit({ type: 'accepted' });
    const weights = await this.loadWeights(item, item.params.model, emit);
    if (!weights) return;
    const toolSyntax = this.grammars.toolSyntax(weights.lm, item);
    const grammar = await this.prepareGrammar(weights.lm, item, toolSyntax, emit);
    if (grammar === undefined) return;
    await this.exclusive(async () => {
      // Cancelled while its weights loaded: its client is gone, nothing more is sent.
      if (this.cancels.take(item.completion_id)) {
        this.release(item);
        return;
      }
      const completion = this.open(item, weights.lm, grammar, toolSyntax, emit);
      if (completion) await this.batches.join(completion, weights.adapter, admission);
      this.retireFinished();
    });
    this.startLoop();
  }

  /** Takes a token sampling from the queue to its first tokens: accept, load, check, prefill. */
  private async startSampling(item: TokenSampleWorkItem, admission: Admission): Promise<void> {
    this.holds.take(item.completion_id);
    const emit = this.samplingEmitter(item);
    emit({ type: 'accepted' });
    const weights = await this.loadWeights(item, item.model, emit);
    if (!weights) return;
    await this.exclusive(async () => {
      if (this.cancels.take(item.completion_id)) {
        this.release(item);
        return;
      }
      const sampling = this.openSampling(item, weights.lm, emit);
      if (sampling) await this.batches.join(sampling, weights.adapter, admission);
      this.retireFinished();
    });
    this.startLoop();
  }

  /**
   * How a token sampling's events are sent to the chat replica waiting for it. A result NATS
   * cannot carry (chat bounds the request so that it fits) becomes an error rather than silence.
   */
  private samplingEmitter(item: TokenSampleWorkItem): (event: TokenSampleEvent) => void {
    return (event) => {
      try {
        this.bus.publishTo(Subjects.chat.tokenSampleEvents, item.reply_subject, event);
      } catch (err) {
        this.logger.error(`cannot send ${event.type} of ${item.completion_id}: ${(err as Error).message}`);
        if (event.type !== 'result') return;
        try {
          this.bus.publishTo(Subjects.chat.tokenSampleEvents, item.reply_subject, errorEvent(ErrorCode.Internal, `The sampling result could not be sent: ${(err as Error).message}`));
        } catch {
          // The connection is gone: chat sees the worker stop answering for it.
        }
      }
    };
  }

  /**
   * The running sampling, or null once the refusal has been told. Chat checks the token ids and
   * the lengths before queueing (when it can read the model's config); these checks are a defence.
   */
  private openSampling(item: TokenSampleWorkItem, lm: LoadedModel, emit: (event: TokenSampleEvent) => void): RunningSampling | null {
    const refuse = (code: ErrorCode, message: string, param?: string) => {
      this.release(item);
      emit(errorEvent(code, message, param));
      return null;
    };
    const vocab = lm.config.vocabSize;
    const prompt = item.prompt_tokens;
    const bad = prompt.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
    if (prompt.length === 0) return refuse(ErrorCode.InvalidRequest, 'prompt has no tokens', 'prompt');
    if (bad >= 0) return refuse(ErrorCode.InvalidRequest, `prompt token ${bad} is ${prompt[bad]}, outside the vocabulary of ${item.model} (0 to ${vocab - 1})`, 'prompt');
    const window = lm.prompt.contextWindow;
    const maxTokens = lm.prompt.room(prompt.length, item.sampling_params.max_tokens ?? window);
    if (maxTokens < 1) {
      return refuse(ErrorCode.ContextLengthExceeded, `This model's maximum context length is ${window} tokens, but the prompt has ${prompt.length}, leaving no room to sample`, 'prompt');
    }
    try {
      const sampling = new RunningSampling(item, lm, maxTokens, emit);
      this.running.set(sampling.id, sampling);
      return sampling;
    } catch (err) {
      this.logger.error(`cannot open ${item.completion_id}: ${(err as Error).stack}`);
      return refuse(ErrorCode.Internal, 'Sampling failed on the inference worker');
    }
  }

  /** How a completion's events are sent: numbered from 0, so the gateway notices one lost in transit. */
  private emitter(item: InferenceWorkItem): Emit {
    let seq = 0;
    return (event) => this.bus.publishTo(Subjects.chat.completionEvents, item.reply_subject, { ...event, seq: seq++ });
  }

  /** The base model and the checkpoint's adapter, or null once the failure has been told. */
  private async loadWeights(item: InferenceWorkRouting, model: string, emit: (event: ErrorEvent) => void): Promise<{ lm: LoadedModel; adapter: LoraAttachment | null } | null> {
    try {
      const lm = await this.models.acquire(item.base_model_dir, item.base_model_bundle);
      const adapter = item.adapter ? await this.adapters.acquire(lm, item.adapter) : null;
      return { lm, adapter };
    } catch (err) {
      this.release(item);
      this.logger.error(`cannot load weights for ${item.completion_id}: ${(err as Error).message}`);
      // A model directory the engine cannot read fails the same way on every worker: the request is at fault, not the moment.
      if (err instanceof ModelLoadError) emit(errorEvent(ErrorCode.InvalidRequest, `The model ${model} cannot be served by this engine: ${err.reason}${err.tensor ? ` (tensor ${err.tensor})` : ''}`, 'model'));
      else emit(errorEvent(ErrorCode.Unavailable, `The weights of ${model} could not be loaded on this worker`));
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
      return await this.grammars.compile(lm, item, toolSyntax);
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

  /**
   * The rendered prompt, and the tokens it leaves to generate: never past the context window
   * (the choice then ends with "length"). The chat service refuses a prompt that does not fit
   * before queueing it, counting it with the same ChatPrompt; this check is a defence only.
   */
  private prompt(lm: LoadedModel, item: InferenceWorkItem): { promptIds: number[]; maxTokens: number } {
    const { messages, tools, max_tokens, chat_template_kwargs } = item.params;
    const promptIds = lm.prompt.encode(messages, tools, chat_template_kwargs);
    const maxTokens = lm.prompt.room(promptIds.length, max_tokens);
    if (maxTokens < 1) {
      this.logger.warn(`${item.completion_id} reached the worker too long for the context window: chat could not count its prompt (can it read ${item.base_model_dir}?)`);
      throw ServiceError.contextLengthExceeded(lm.prompt.contextWindow, promptIds.length, tools !== null);
    }
    return { promptIds, maxTokens };
  }

  /** Lets go of the weights a completion held, of its hold on shutdown, and stops answering for it. */
  private release(item: InferenceWorkRouting): void {
    this.models.release(item.base_model_dir);
    if (item.adapter) this.adapters.release(item.adapter);
    this.holds.release(item.completion_id);
  }

  private startLoop(): void {
    if (this.looping || this.batches.decoding === 0) return;
    this.looping = true;
    void this.loop().finally(() => {
      this.looping = false;
      this.startLoop();
    });
  }

  private async loop(): Promise<void> {
    while (this.batches.decoding > 0) {
      for (const model of this.batches.models) {
        await this.exclusive(async () => {
          // A prompt on its way in joins after one step, not after a run of them, nor one run ahead.
          const admitting = this.slots.admitting > 0;
          await this.batches.step(model, admitting ? 1 : this.runSteps, !admitting && this.runAhead);
          this.retireFinished();
        });
      }
      // Let NATS deliver cancellations and new work between steps.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Removes finished and cancelled completions, their sequences and their hold on the model. */
  private retireFinished(): void {
    for (const completion of [...this.running.values()]) {
      if (!completion.done && !completion.cancelled) continue;
      this.batches.retire(completion);
      this.running.delete(completion.id);
      this.release(completion.item);
    }
    this.batches.dropEmpty();
    this.slots.changed();
  }

  /** Ends every running completion with an error its client sees. */
  private failRunning(): void {
    for (const completion of this.running.values()) {
      completion.fail(errorEvent(ErrorCode.Unavailable, 'The inference worker is shutting down; retry the request'));
      completion.abandon();
    }
    this.retireFinished();
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.turn.then(fn);
    this.turn = result.catch(() => undefined);
    return result;
  }
}
