import type { ReasoningMarkers } from '../reasoning';
import type { LogitsProcessor, QuickCheck } from '../sampling';
import type { GrammarMatcher } from './json-matcher';

/**
 * A grammar (JSON mode, a schema, tool calls) that constrains only the answer of a reply that
 * reasons first. While the model reasons nothing is masked but the end of the reply, since an
 * answer must follow; once the closing marker is sampled the grammar starts on the next token.
 * The budget counts the whole reply, so the reasoning is closed (the marker forced) while the
 * grammar's smallest document still fits in what is left: the answer then closes in time as
 * it does without reasoning.
 */
export class ReasoningGate {
  /** Index of the answer's first token among the generated ones; -1 while the model reasons. */
  private answerStart = -1;
  /** Generated tokens already searched for the closing marker. */
  private searched = 0;
  private readonly eos: Set<number>;
  private readonly masked: LogitsProcessor;
  private readonly checked: QuickCheck;
  private readonly checkApplies: (generated: readonly number[]) => boolean;
  private readonly complete: (generated: readonly number[]) => boolean;

  constructor(
    private readonly matcher: GrammarMatcher,
    private readonly markers: ReasoningMarkers,
    eosTokenIds: readonly number[],
  ) {
    this.eos = new Set(eosTokenIds);
    this.masked = matcher.logitsProcessor();
    this.checked = matcher.quickCheck();
    this.checkApplies = matcher.quickCheckApplies();
    this.complete = matcher.completeCheck();
  }

  /** Tokens the reasoning leaves at least: the closing marker and the grammar's smallest document. */
  get reserved(): number {
    return this.matcher.minimalDocument + 1;
  }

  logitsProcessor(): LogitsProcessor {
    return (logits, generated) => {
      if (this.answering(generated)) return this.masked(logits, generated);
      if (this.mustClose(generated)) {
        const close = logits[this.markers.closeId];
        logits.fill(-Infinity);
        logits[this.markers.closeId] = close;
      } else {
        for (const id of this.eos) if (id < logits.length) logits[id] = -Infinity;
      }
    };
  }

  quickCheck(): QuickCheck {
    return (id, generated) => (this.answering(generated) ? this.checked(id, generated) : !this.mustClose(generated) && !this.eos.has(id));
  }

  /** While the reasoning lasts, the check allows any token but the end of the sequence until the reasoning must close. */
  quickCheckApplies(): (generated: readonly number[]) => boolean {
    return (generated) => (this.answering(generated) ? this.checkApplies(generated) : !this.mustClose(generated));
  }

  completeCheck(): (generated: readonly number[]) => boolean {
    return (generated) => this.answering(generated) && this.complete(generated);
  }

  /** Whether the reasoning is over; the first time it is found to be, the grammar starts after it. */
  private answering(generated: readonly number[]): boolean {
    if (this.answerStart >= 0) return true;
    for (; this.searched < generated.length; this.searched++) {
      if (generated[this.searched] !== this.markers.closeId) continue;
      this.answerStart = this.searched + 1;
      this.matcher.startAt(this.answerStart);
      return true;
    }
    return false;
  }

  private mustClose(generated: readonly number[]): boolean {
    return this.matcher.maxTokens - generated.length <= this.reserved;
  }
}
