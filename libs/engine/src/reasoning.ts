import type { ChatTemplate } from './chat-template';
import type { TextTokenizer } from './tokenizer';

/**
 * How a model that reasons before it answers marks its reasoning (Qwen3, and the DeepSeek-R1
 * style generally): the reply is `<think>reasoning</think>answer`. Such a model's chat template
 * reads `enable_thinking` (clients pass it in chat_template_kwargs, as vLLM and SGLang take it;
 * the templates reason unless it is false) and its tokenizer holds both markers as single tokens.
 */
export interface ReasoningMarkers {
  openId: number;
  closeId: number;
  /** The markers' text as the tokenizer decodes them, to cut them out of a delta. */
  openText: string;
  closeText: string;
}

/** The model's reasoning markers, or null for a model that does not reason apart from its answer. */
export function reasoningMarkers(tokenizer: TextTokenizer, template: ChatTemplate | null): ReasoningMarkers | null {
  if (!template || !/\benable_thinking\b/.test(template.source)) return null;
  const openId = tokenizer.tokenToId('<think>');
  const closeId = tokenizer.tokenToId('</think>');
  if (openId === undefined || closeId === undefined) return null;
  return { openId, closeId, openText: '<think>', closeText: '</think>' };
}

/** Whether a reply of this model reasons first: it can, and the request did not turn it off. */
export function repliesWithReasoning(markers: ReasoningMarkers | null, templateKwargs: Record<string, unknown> | null | undefined): boolean {
  return markers !== null && templateKwargs?.['enable_thinking'] !== false;
}

/**
 * Splits a reply, token by token, into its reasoning and its answer: a reply that reasons
 * first is reasoning until its closing marker (an opening marker at its start dropped), then
 * answer; the markers themselves belong to neither, and each part's leading whitespace is
 * dropped (the templates put newlines around the markers). A reply that does not reason is
 * all answer, as generated. The token ids are untouched: they cover the whole reply, markers
 * included, so RL trains on exactly what was sampled.
 */
export class ReasoningSplitter {
  /** Whether the reply reasons first (the markers are known and the request did not turn it off). */
  readonly reasons: boolean;
  private inReasoning: boolean;
  private reasoningText = '';
  private answerText = '';

  constructor(
    private readonly markers: ReasoningMarkers | null,
    reasoningFirst: boolean,
  ) {
    this.reasons = reasoningFirst && markers !== null;
    this.inReasoning = this.reasons;
  }

  /** The reasoning so far; null for a reply that does not reason. */
  get reasoning(): string | null {
    return this.reasons ? this.reasoningText : null;
  }

  get answer(): string {
    return this.answerText;
  }

  /** The new reasoning and answer text that token `id`, decoded as `text`, adds. */
  push(id: number, text: string): { reasoning: string; answer: string } {
    if (!this.inReasoning || !this.markers) return { reasoning: '', answer: this.addAnswer(text) };
    if (id === this.markers.closeId) {
      this.inReasoning = false;
      return { reasoning: this.addReasoning(withoutSuffix(text, this.markers.closeText)), answer: '' };
    }
    if (id === this.markers.openId && this.reasoningText === '') return { reasoning: this.addReasoning(withoutSuffix(text, this.markers.openText)), answer: '' };
    return { reasoning: this.addReasoning(text), answer: '' };
  }

  private addReasoning(text: string): string {
    const added = this.reasoningText === '' ? text.trimStart() : text;
    this.reasoningText += added;
    return added;
  }

  private addAnswer(text: string): string {
    // A closing marker's text held back by the generator (it could have begun a stop string) arrives with the answer's first delta.
    const added = this.reasons && this.answerText === '' ? withoutPrefix(text.trimStart(), (this.markers as ReasoningMarkers).closeText).trimStart() : text;
    this.answerText += added;
    return added;
  }
}

/** `text` without `prefix` at its start. */
function withoutPrefix(text: string, prefix: string): string {
  return text.startsWith(prefix) ? text.slice(prefix.length) : text;
}

/** `text` without `suffix` at its end (a marker decoded as text; special markers decode to nothing). */
function withoutSuffix(text: string, suffix: string): string {
  return text.endsWith(suffix) ? text.slice(0, -suffix.length) : text;
}
