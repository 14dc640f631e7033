import type { InferenceWorkRouting } from '@trainyard/contracts';
import type { DrawnToken, LoadedModel, PromptScores, RowDraw } from '@trainyard/engine';
import type { ErrorEvent } from './inference-events';

/**
 * What DecodeBatches runs: one piece of work off the inference queue with its sequences, a chat
 * completion (RunningCompletion, one sequence per choice) or a token sampling (RunningSampling,
 * one per sample). The batches prefill its prompt once per sequence, feed each sequence's logits
 * (or device-drawn token) back to it, and fail it when a pass fails.
 */
export interface DecodingWork {
  readonly id: string;
  readonly item: InferenceWorkRouting;
  readonly lm: LoadedModel;
  readonly promptIds: number[];
  /** Its sequences' keys in its model's DecodeBatch, by index. */
  readonly sequences: readonly ChoiceSequence[];
  readonly cancelled: boolean;
  readonly done: boolean;
  /** Prompt tokens reused from the worker's prompt cache rather than prefilled (set by the batches). */
  cachedTokens: number;
  /** k >= 0: the first sequence's prefill also scores the prompt (scored() gets it, with top-k when k > 0); null: no scores. */
  readonly promptScoring: number | null;
  scored(scores: PromptScores): void;
  /** Samples sequence `index`'s next token from its logits; the token to feed back, or null when it finished. */
  advance(index: number, logits: Float32Array): number | null;
  /** Tokens sequence `index` may still generate before its max_tokens. */
  tokensLeft(index: number): number;
  /** Whether sequence `index`'s next token can be drawn on the device, without its logits. */
  drawsWithoutLogits(index: number): boolean;
  /** Sequence `index`'s draw for its next token; the token drawn with it goes to advanceDrawn. */
  draw(index: number): RowDraw;
  advanceDrawn(index: number, token: DrawnToken): number | null;
  /**
   * Whether sequence `index`'s next token can be drawn on the device from its logits as they
   * are and then checked against its grammar (SequenceGenerator.drawsThenChecks): its logits
   * are needed only where the check refuses the token.
   */
  drawsThenChecks(index: number): boolean;
  /** As advanceDrawn, for a token drawn where drawsThenChecks; REFUSED where the grammar refuses it: give the step's logits to advanceRefused. */
  advanceChecked(index: number, token: DrawnToken): number | null | typeof REFUSED;
  /** Samples sequence `index`'s next token from the logits whose device-drawn token advanceChecked refused. */
  advanceRefused(index: number, logits: Float32Array): number | null;
  /** Tells its client the error (the caller abandons it afterwards). */
  fail(error: ErrorEvent): void;
  /** Ends every unfinished sequence (client gone or worker stopping) without further events. */
  abandon(): void;
}

/** What advanceChecked answers for a drawn token the sequence's grammar refuses. */
export const REFUSED: unique symbol = Symbol('refused');

/**
 * One sequence of a piece of work: its row's key in a DecodeBatch. Compared by identity, so a
 * step's outputs lead straight back to the work and the sequence that asked for them.
 */
export class ChoiceSequence {
  constructor(
    readonly completion: DecodingWork,
    readonly index: number,
  ) {}

  /** How DecodeBatch names the sequence in its errors. */
  toString(): string {
    return `${this.completion.id}#${this.index}`;
  }
}
