import { Logger } from '@nestjs/common';
import { DecodeBatch, DrawnToken, drawOnDeviceAvailable, LoraAttachment, LoraRouter, PromptCache, RowDraw } from '@trainyard/engine';
import { AdapterCache } from '../models/adapter-cache';
import { ChoiceSequence, DecodingWork, REFUSED } from './decoding-work';
import { generationFailedEvent } from './inference-events';
import type { Admission } from './slot-ledger';

/**
 * Sequences decoding together: every sequence of one base model, each with its own LoRA
 * adapter (a checkpoint) or none; the router gives each row of a step its adapter.
 */
interface Batch {
  decode: DecodeBatch<ChoiceSequence>;
  router: LoraRouter;
  /** The adapter of each sequence in the batch (null: the base model). */
  adapters: Map<ChoiceSequence, LoraAttachment | null>;
  /** A run submitted before the one before it was read (DecodeBatch.stepsDrawnAfter): the next step() takes its tokens. */
  ahead: Promise<Map<ChoiceSequence, DrawnToken>[]> | null;
}

/**
 * One batch per base model, and the token each live sequence feeds into its next step. Callers
 * take turns: a join or a step must never interleave with another on the same batch (the
 * scheduler's lock), because the adapters routed to a shared base model's rows must be those
 * of the pass being run.
 */
export class DecodeBatches {
  private readonly logger = new Logger(DecodeBatches.name);
  private readonly batches = new Map<string, Batch>();
  /** The token each live sequence feeds into the next step. */
  private readonly pending = new Map<ChoiceSequence, number>();

  /** Prefilled prompts of every loaded model, for the next prompt that begins the same way (null: reuse off). */
  constructor(private readonly prompts: PromptCache | null) {}

  /** Sequences decoding now. */
  get decoding(): number {
    return this.pending.size;
  }

  /** The base models with a batch, each stepped in turn. */
  get models(): string[] {
    return [...this.batches.keys()];
  }

  /**
   * Prefills each sequence into the batch of its base model and samples its first token; each
   * sequence is seated in `admission` as it starts decoding (or finishes at once). A failed
   * prefill (out of memory, say) fails this completion alone; the batch goes on.
   */
  async join(completion: DecodingWork, adapter: LoraAttachment | null, admission: Admission): Promise<void> {
    const { item } = completion;
    const batch = this.batchFor(item.base_model_dir, completion);
    batch.router.route([adapter]);
    // A prompt's keys and values depend on the adapter it was prefilled with.
    const reuse = this.prompts ? { cache: this.prompts, namespace: item.adapter ? AdapterCache.key(item.adapter) : '' } : undefined;
    try {
      for (const sequence of completion.sequences) {
        let logits: Float32Array;
        if (sequence.index === 0 && completion.promptScoring !== null) {
          // The prompt's own logprobs, from a prefill that keeps every position's logits.
          const joined = await batch.decode.joinScored(sequence, completion.promptIds, completion.promptScoring, reuse);
          completion.scored(joined.scores);
          logits = joined.logits;
        } else {
          logits = await batch.decode.join(sequence, completion.promptIds, reuse);
        }
        // The prompt is counted once, like prompt_tokens: what its first choice did not prefill.
        if (sequence.index === 0) completion.cachedTokens = batch.decode.reusedTokens(sequence);
        const next = completion.advance(sequence.index, logits);
        if (next === null) batch.decode.leave(sequence);
        else {
          this.pending.set(sequence, next);
          batch.adapters.set(sequence, adapter);
        }
        admission.seated();
      }
    } catch (err) {
      this.logger.error(`prefill failed for ${completion.id}: ${(err as Error).stack ?? (err as Error).message}`);
      completion.fail(generationFailedEvent(err));
      completion.abandon();
    }
  }

  /**
   * Advances every sequence of `model`'s batch together: by `steps` tokens where the batch's
   * drawn tokens can stay on the device between steps (DecodeBatch.stepsDrawn), else by one,
   * in which a sequence whose sampler needs its logits gets them while the others are drawn on
   * the device (DecodeBatch.stepMixed), and one whose grammar refused the token drawn for it
   * gets them after the step (lastLogits). A sequence that ends within a run of steps drops the
   * tokens drawn for it after its end. With `ahead`, the next run is submitted before this
   * one's tokens are read (runAhead), and the next call takes its tokens. A failed step fails
   * every completion in the batch (retire them afterwards).
   */
  async step(model: string, steps = 1, ahead = false): Promise<void> {
    const batch = this.batches.get(model);
    if (!batch || batch.decode.size === 0) return;
    let running: Promise<ReadonlyMap<ChoiceSequence, Float32Array | DrawnToken>[]>;
    if (batch.ahead) {
      running = batch.ahead;
      batch.ahead = null;
    } else {
      batch.router.route(batch.decode.ids.map((sequence) => batch.adapters.get(sequence) ?? null));
      const feed = new Map(batch.decode.ids.map((sequence) => [sequence, this.pending.get(sequence) as number]));
      const { draws, everyRow } = this.deviceDraws(batch, steps);
      if (everyRow) running = batch.decode.stepsDrawn(feed, draws);
      else if (draws.length > 0) running = batch.decode.stepMixed(feed, draws[0]).then((outcome) => [outcome]);
      else running = batch.decode.step(feed).then((outcome) => [outcome]);
    }
    if (ahead && steps > 1) batch.ahead = this.runAhead(batch, steps);
    let outcomes: ReadonlyMap<ChoiceSequence, Float32Array | DrawnToken>[];
    try {
      outcomes = await running;
    } catch (err) {
      // A run submitted after a failed one has nothing to go on.
      batch.ahead = null;
      this.failBatch(batch, err as Error);
      return;
    }
    const refused: ChoiceSequence[] = [];
    for (const outcome of outcomes) {
      for (const [sequence, value] of outcome) {
        const { completion, index } = sequence;
        // A cancelled completion's last tokens are dropped (it leaves the batch when retired), and so are a sequence's after it ended.
        if (completion.cancelled || !this.pending.has(sequence)) continue;
        let next: number | null | typeof REFUSED;
        if (value instanceof Float32Array) next = completion.advance(index, value);
        else if (completion.drawsThenChecks(index)) next = completion.advanceChecked(index, value);
        else next = completion.advanceDrawn(index, value);
        if (next === REFUSED) refused.push(sequence);
        else this.advanced(batch, sequence, next);
      }
    }
    if (refused.length > 0) await this.sampleRefused(batch, refused);
  }

  /**
   * The batch's next run of `steps` steps, recorded and submitted now, fed the tokens the run
   * just submitted draws, while that run's are still to be read (DecodeBatch.stepsDrawnAfter);
   * null where none can follow it so: a sequence joined or left since (the tokens on the GPU
   * are in the rows of the run before), one is sure to reach its max_tokens within the run in
   * flight (it would leave), or one needs its logits. Its draws are taken now, after the run
   * in flight's, so each sequence still takes its draws in order; a sequence that ends within
   * the run in flight drops what this one drew for it.
   */
  private runAhead(batch: Batch, steps: number): Promise<Map<ChoiceSequence, DrawnToken>[]> | null {
    if (!batch.decode.continuesOnGpu) return null;
    const sequences = batch.decode.ids;
    if (sequences.some((s) => !s.completion.cancelled && s.completion.tokensLeft(s.index) <= steps)) return null;
    const { draws, everyRow } = this.deviceDraws(batch, steps);
    if (!everyRow || draws.length !== steps) return null;
    const run = batch.decode.stepsDrawnAfter(draws);
    // The next step() awaits it and fails the batch where it failed; until then its failure is handled here.
    run.catch(() => undefined);
    return run;
  }

  /** The token a sequence feeds into its next step, or its leaving where it finished (null). */
  private advanced(batch: Batch, sequence: ChoiceSequence, next: number | null): void {
    if (next === null) {
      this.leave(batch, sequence);
      this.pending.delete(sequence);
    } else {
      this.pending.set(sequence, next);
    }
  }

  /** Sequences whose grammar refused the token drawn on the device: each sampled from the step's logits, read back for them alone. */
  private async sampleRefused(batch: Batch, refused: readonly ChoiceSequence[]): Promise<void> {
    let logits: Map<ChoiceSequence, Float32Array>;
    try {
      logits = await batch.decode.lastLogits(refused);
    } catch (err) {
      this.failBatch(batch, err as Error);
      return;
    }
    for (const sequence of refused) {
      if (sequence.completion.cancelled) continue;
      this.advanced(batch, sequence, sequence.completion.advanceRefused(sequence.index, logits.get(sequence) as Float32Array));
    }
  }

  /** Takes a completion's sequences out of its batch. */
  retire(completion: DecodingWork): void {
    const batch = this.batches.get(completion.item.base_model_dir);
    for (const sequence of completion.sequences) {
      if (batch?.decode.has(sequence)) this.leave(batch, sequence);
      this.pending.delete(sequence);
    }
  }

  /** An empty batch holds a KV cache and its adapters' stacked factors: drop it. */
  dropEmpty(): void {
    for (const [model, batch] of this.batches) {
      if (batch.decode.size > 0) continue;
      this.disposeBatch(batch);
      this.batches.delete(model);
    }
  }

  dispose(): void {
    for (const batch of this.batches.values()) this.disposeBatch(batch);
    this.batches.clear();
    this.pending.clear();
  }

  private batchFor(model: string, completion: DecodingWork): Batch {
    let batch = this.batches.get(model);
    if (!batch) {
      const { model: weights } = completion.lm;
      batch = { decode: new DecodeBatch<ChoiceSequence>(weights), router: new LoraRouter(weights), adapters: new Map(), ahead: null };
      this.batches.set(model, batch);
    }
    return batch;
  }

  /**
   * The draws of the batch's next step, or run of `steps` steps, on the device (webgpu with the
   * fused kernels): each sequence that can be drawn without its logits (no top-k, top-p, grammar
   * or top logprobs) has one a step, and only its token id and logprob are read back; so has a
   * sequence under a grammar whose quick check can vouch for a token drawn from the logits as
   * they are (drawsThenChecks), whose logits are read back only where it refuses the token.
   * Where every sequence draws without logits (`everyRow`), a run of `steps` steps where the
   * batch's tokens stay on the GPU between them (DecodeBatch.feedsOnGpu); otherwise one step,
   * whose other sequences sample from their own logits; none (no draws) off the device. Each
   * sequence takes its draws from its own random source in order, so a seeded sequence draws
   * the same tokens however many steps a run takes.
   */
  private deviceDraws(batch: Batch, steps: number): { draws: Map<ChoiceSequence, RowDraw>[]; everyRow: boolean } {
    if (!drawOnDeviceAvailable()) return { draws: [], everyRow: false };
    const sequences = batch.decode.ids;
    // A cancelled sequence still in the batch gets a greedy draw; its token is dropped.
    const free = (s: ChoiceSequence) => s.completion.cancelled || s.completion.drawsWithoutLogits(s.index);
    // A sequence under a grammar draws too where its quick check can vouch for the token; it is checked between steps, so none runs a run of them.
    const drawn = sequences.filter((s) => free(s) || s.completion.drawsThenChecks(s.index));
    if (drawn.length === 0) return { draws: [], everyRow: false };
    const everyRow = sequences.every(free);
    // feedsOnGpu asks the model's step whether it applies (a walk over its adapters): only where a run is wanted.
    const run = everyRow && steps > 1 && batch.decode.feedsOnGpu ? steps : 1;
    const draw = (s: ChoiceSequence): RowDraw => (s.completion.cancelled ? { temperature: 0, u: 0 } : s.completion.draw(s.index));
    return { draws: Array.from({ length: run }, () => new Map(drawn.map((s) => [s, draw(s)]))), everyRow };
  }

  private failBatch(batch: Batch, err: Error): void {
    this.logger.error(`decode step failed: ${err.stack ?? err.message}`);
    for (const { completion } of [...batch.decode.ids]) {
      if (completion.cancelled) continue;
      completion.fail(generationFailedEvent(err));
      completion.abandon();
    }
  }

  private leave(batch: Batch, sequence: ChoiceSequence): void {
    batch.decode.leave(sequence);
    batch.adapters.delete(sequence);
  }

  private disposeBatch(batch: Batch): void {
    batch.router.dispose();
    batch.decode.dispose();
  }
}
