import type { InferenceEvent, InferenceWorkItem, TokenInfo } from '@trainyard/contracts';
import {
  CompiledGrammar,
  DrawnToken,
  GenerationStep,
  GrammarMatcher,
  LoadedModel,
  PromptScores,
  ReasoningGate,
  ReasoningSplitter,
  ReplyPart,
  repliesWithReasoning,
  RowDraw,
  SampledToken,
  SequenceGenerator,
  ToolCallStream,
  ToolCallSyntax,
} from '@trainyard/engine';
import { ChoiceSequence, DecodingWork, REFUSED } from './decoding-work';
import type { ErrorEvent } from './inference-events';

/**
 * One chat completion on this worker: its rendered prompt and one SequenceGenerator per
 * choice (n), each with its own grammar matcher in JSON mode or with tools, and with tools
 * its own ToolCallStream. A reasoning model's reply is split into its reasoning and its
 * answer (ReasoningSplitter), and the grammar and tool calls apply to the answer only
 * (ReasoningGate). It turns each sampled token into the events the gateway assembles into the
 * OpenAI response, in order: prompt, deltas (reasoning, message text and tool-call pieces),
 * one finish per choice, done.
 */
export class RunningCompletion implements DecodingWork {
  readonly generators: SequenceGenerator[];
  /** Each choice's key in its model's DecodeBatch, by choice index. */
  readonly sequences: readonly ChoiceSequence[];
  cancelled = false;
  /** Prompt tokens reused from the worker's prompt cache rather than prefilled (reported in usage). */
  cachedTokens = 0;
  /** A chat completion reports no prompt logprobs. */
  readonly promptScoring = null;
  private finished = 0;
  private readonly matchers: GrammarMatcher[];
  /** With tools: each choice's reply split into text and calls as it is generated. */
  private readonly toolStreams: ToolCallStream[];
  /** Each choice's reply split into reasoning and answer (all answer for a model that does not reason). */
  private readonly splitters: ReasoningSplitter[];

  constructor(
    readonly item: InferenceWorkItem,
    readonly lm: LoadedModel,
    readonly promptIds: number[],
    /** Tokens each choice may generate: max_tokens, or less where the context window ends first. */
    maxTokens: number,
    private readonly emit: (event: InferenceEvent) => void,
    grammar: CompiledGrammar | null,
    toolSyntax: ToolCallSyntax | null,
  ) {
    const { params } = item;
    const markers = lm.prompt.reasoning;
    const reasons = repliesWithReasoning(markers, params.chat_template_kwargs);
    this.matchers = grammar ? Array.from({ length: params.n }, () => grammar.newMatcher(maxTokens)) : [];
    this.toolStreams = toolSyntax ? Array.from({ length: params.n }, () => new ToolCallStream(toolSyntax)) : [];
    this.splitters = Array.from({ length: params.n }, () => new ReasoningSplitter(markers, reasons));
    // The grammar's hooks, behind a gate that holds them until the reasoning is over.
    const hooks = this.matchers.map((matcher) => (reasons && markers ? new ReasoningGate(matcher, markers, lm.eosTokenIds) : matcher));
    this.generators = Array.from(
      { length: params.n },
      (_, i) =>
        new SequenceGenerator(
          lm.tokenizer,
          {
            temperature: params.temperature,
            topP: params.top_p,
            // Each choice gets its own stream of randomness, reproducible from the seed.
            seed: params.seed === null ? undefined : params.seed + i,
            topLogprobs: params.logprobs ? params.top_logprobs : 0,
            maxTokens,
            stop: params.stop,
            // Without logprobs, the sampler can skip work for them, and JSON mode's full mask when the drawn token passes.
            logprobs: params.logprobs,
            // JSON mode and tools: only tokens that keep the text valid, closing in time.
            logitsProcessor: hooks[i]?.logitsProcessor(),
            quickCheck: hooks[i]?.quickCheck(),
            quickCheckApplies: hooks[i]?.quickCheckApplies(),
            // JSON mode: a document the grammar closed on the budget's last token is complete ("stop").
            // Not with tools, whose free text may end anywhere: a reply with calls says tool_calls anyway.
            documentComplete: toolSyntax ? undefined : hooks[i]?.completeCheck(),
            // The model's logprobs, not the grammar-restricted ones: RL compares them with the
            // model's own (a forced token would otherwise report 0 and never be learned).
            modelLogprobs: true,
          },
          lm.eosTokenIds,
        ),
    );
    this.sequences = this.generators.map((_, i) => new ChoiceSequence(this, i));
    emit({ type: 'prompt', prompt_tokens: promptIds.length, prompt_token_ids: params.return_token_ids ? promptIds : [] });
  }

  get id(): string {
    return this.item.completion_id;
  }

  get done(): boolean {
    return this.finished === this.generators.length;
  }

  /** Samples choice `index`'s next token from its logits; returns the token to feed back, or null when it finished. */
  advance(index: number, logits: Float32Array): number | null {
    return this.proceed(index, this.generators[index].next(logits));
  }

  tokensLeft(index: number): number {
    return this.generators[index].tokensLeft;
  }

  /** Whether choice `index`'s next token can be drawn on the device, without its logits (SequenceGenerator.drawsWithoutLogits). */
  drawsWithoutLogits(index: number): boolean {
    return this.generators[index].drawsWithoutLogits;
  }

  /** Choice `index`'s draw for its next token; the token drawn with it goes to advanceDrawn. */
  draw(index: number): RowDraw {
    return this.generators[index].draw();
  }

  /** As advance, with the token drawn on the device from draw()'s draw. */
  advanceDrawn(index: number, token: DrawnToken): number | null {
    return this.proceed(index, this.generators[index].accept(token));
  }

  /** Whether choice `index`'s next token can be drawn on the device and then checked against its grammar (SequenceGenerator.drawsThenChecks). */
  drawsThenChecks(index: number): boolean {
    return this.generators[index].drawsThenChecks;
  }

  /** As advanceDrawn, where the grammar's quick check allows the token; else REFUSED. */
  advanceChecked(index: number, token: DrawnToken): number | null | typeof REFUSED {
    const step = this.generators[index].acceptChecked(token);
    return step ? this.proceed(index, step) : REFUSED;
  }

  /** As advance, from the logits whose device-drawn token advanceChecked refused. */
  advanceRefused(index: number, logits: Float32Array): number | null {
    return this.proceed(index, this.generators[index].nextRefused(logits));
  }

  /** Emits choice `index`'s step; the token to feed back, or null when the choice finished with it. */
  private proceed(index: number, step: GenerationStep): number | null {
    this.emitDelta(index, step);
    if (!step.finished) return step.token.id;
    this.finish(index, this.generators[index]);
    return null;
  }

  /** Ends every unfinished choice (client gone or worker stopping) without further events. */
  abandon(): void {
    this.cancelled = true;
    this.release();
  }

  private release(): void {
    for (const matcher of this.matchers.splice(0)) matcher.dispose();
  }

  scored(_scores: PromptScores): void {
    // Never asked for (promptScoring is null).
  }

  fail(error: ErrorEvent): void {
    this.emit(error);
  }

  /** The step's token (with logprobs) and the reasoning, text or tool-call pieces it completed; the token goes with the first. */
  private emitDelta(index: number, step: GenerationStep): void {
    const tokens = this.item.params.logprobs ? [this.tokenInfo(step.token)] : [];
    const { reasoning, answer } = this.splitters[index].push(step.token.id, step.delta);
    const stream = this.toolStreams[index];
    const parts: (ReplyPart | { kind: 'reasoning'; text: string })[] = stream ? stream.push(answer) : answer ? [{ kind: 'text', text: answer }] : [];
    if (stream && step.finished) parts.push(...stream.end());
    if (reasoning) parts.unshift({ kind: 'reasoning', text: reasoning });
    if (parts.length === 0 && tokens.length > 0) this.emit({ type: 'delta', index, text: '', tokens });
    parts.forEach((part, i) => {
      const event = { type: 'delta' as const, index, text: '', tokens: i === 0 ? tokens : [] };
      if (part.kind === 'reasoning') this.emit({ ...event, reasoning: part.text });
      else if (part.kind === 'text') this.emit({ ...event, text: part.text });
      else if (part.kind === 'call') this.emit({ ...event, tool_call: { index: part.index, id: part.id, name: part.name, arguments: '' } });
      else this.emit({ ...event, tool_call: { index: part.index, arguments: part.text } });
    });
  }

  private finish(index: number, generator: SequenceGenerator): void {
    const stream = this.toolStreams[index];
    const splitter = this.splitters[index];
    const { content, toolCalls } = stream ? stream.result() : { content: splitter.reasons ? splitter.answer : generator.text, toolCalls: [] };
    const reasoning = splitter.reasoning;
    this.emit({
      type: 'finish',
      index,
      // A reply with calls asks for their results, however it ended (the grammar closed them in time).
      finish_reason: toolCalls.length > 0 ? 'tool_calls' : (generator.finishReason ?? 'stop'),
      content,
      tool_calls: toolCalls.length > 0 ? toolCalls : null,
      ...(reasoning === null ? {} : { reasoning_content: reasoning }),
      completion_token_ids: generator.tokenIds,
    });
    this.finished++;
    if (this.done) {
      this.release();
      const completionTokens = this.generators.reduce((sum, g) => sum + g.tokens.length, 0);
      this.emit({ type: 'done', usage: { prompt_tokens: this.promptIds.length, completion_tokens: completionTokens, cached_tokens: this.cachedTokens } });
    }
  }

  private tokenInfo(token: SampledToken): TokenInfo {
    const describe = (id: number) => {
      const text = this.lm.tokenizer.decode([id], { skipSpecialTokens: false });
      return { id, token: text, bytes: [...Buffer.from(text, 'utf8')] };
    };
    return {
      ...describe(token.id),
      logprob: token.logprob,
      top_logprobs: token.topLogprobs.map((t) => ({ ...describe(t.id), logprob: t.logprob })),
    };
  }
}
