import { Inject, Injectable } from '@nestjs/common';
import { ChatCompletionObject, ChatCompletionParams, ChatMessageInput, ErrorCode, FunctionTool, InferenceEvent, JsonSchemaFormat, ServiceError, ToolChoice } from '@trainyard/contracts';
import type { Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/caller';
import { GatewayConfig } from '../config/gateway.config';
import { CompletionAssembler } from './completion-assembler';
import { CompletionRunner, foldEvents } from './completion-runner';
import { ChatCompletionRequest, ChatMessageDto } from './dto/chat-completion.request';
import { recorded, ServedTraceRecorder } from './served-trace.recorder';
import { StoredCompletions } from './stored-completions';
import { checkToolChoice } from './tool-choice';
import { unmatchedToolResult } from './tool-results';
import { HTTP_STATUS_BY_CODE } from '../http/error-status';
import { openEventStream } from '../http/event-stream';
import { openAiEnvelope } from '../http/http-error.filter';

/**
 * The HTTP half of a chat completion: run it on the chat machinery (CompletionRunner: a
 * client that goes away cancels it, shutdown ends it with a 503 to retry), and relay the
 * worker's events as one response or as Server-Sent Events.
 */
@Injectable()
export class ChatCompletionsService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    private readonly runner: CompletionRunner,
    private readonly stored: StoredCompletions,
  ) {}

  async create(caller: Caller, body: ChatCompletionRequest, res: Response): Promise<void> {
    const params = this.normalize(body);
    const completionId = `chatcmpl-${randomUUID()}`;
    const store = body.store === true;
    try {
      await this.runner.run({ completionId, caller, params, logprobsRequested: body.logprobs ?? null, recordTokens: store }, res, async (started, served) => {
        const assembler = new CompletionAssembler(completionId, started, { n: params.n, returnTokenIds: params.return_token_ids || started.logprobs });
        const recorder = new ServedTraceRecorder(started, params);
        const events = store ? recorded(served, recorder) : served;
        // Kept before the client sees the end, so that a list right after it finds it.
        const keep = store ? () => this.stored.store(caller, assembler.response() as ChatCompletionObject, body.metadata ?? {}, recorder.trace()) : async () => undefined;
        res.setHeader('x-trainyard-checkpoint-step', started.checkpoint_step === null ? 'base' : String(started.checkpoint_step));
        if (body.stream) return this.stream(events, assembler, res, body.stream_options?.include_usage === true, keep);
        await foldEvents(events, assembler);
        await keep();
        res.status(200).json(assembler.response());
      });
    } catch (err) {
      if (!res.headersSent) throw err;
      // Mid-stream: the status line is gone, so the error travels as a last event.
      const error = err instanceof ServiceError ? err : new ServiceError(ErrorCode.Internal, 'Internal server error');
      res.write(`data: ${JSON.stringify(openAiEnvelope(error, HTTP_STATUS_BY_CODE[error.code]))}\n\n`);
      res.end();
    }
  }

  /**
   * The stream opens with the first chunk (the worker's prompt event): what is refused before
   * that (the prompt does not fit, JSON mode's budget, a template that cannot render these
   * messages) is still answered with its own status, as for a request that is not streamed.
   */
  private async stream(
    events: AsyncIterable<InferenceEvent>,
    assembler: CompletionAssembler,
    res: Response,
    includeUsage: boolean,
    keep: () => Promise<void>,
  ): Promise<void> {
    const send = (data: string) => {
      if (!res.headersSent) openEventStream(res);
      res.write(`data: ${data}\n\n`);
    };
    await foldEvents(events, assembler, (chunk) => send(JSON.stringify(chunk)));
    await keep();
    if (includeUsage) send(JSON.stringify(assembler.usageChunk()));
    send('[DONE]');
    res.end();
  }

  /** Defaults and the configured limits; a limit broken is a 400 naming the field. */
  private normalize(body: ChatCompletionRequest): ChatCompletionParams {
    const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? this.config.DEFAULT_MAX_TOKENS;
    if (maxTokens > this.config.MAX_COMPLETION_TOKENS) {
      const param = body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
      throw ServiceError.invalid(`${param} is ${maxTokens}; this deployment allows at most ${this.config.MAX_COMPLETION_TOKENS}`, param);
    }
    const n = body.n ?? 1;
    if (n > this.config.MAX_CHOICES) throw ServiceError.invalid(`n is ${n}; this deployment allows at most ${this.config.MAX_CHOICES}`, 'n');
    if (body.top_logprobs && !body.logprobs) throw ServiceError.invalid('top_logprobs requires logprobs: true', 'top_logprobs');
    if (body.response_format?.type === 'json_schema' && !body.response_format.json_schema) {
      throw ServiceError.invalid('response_format.json_schema is required when type is "json_schema"', 'response_format');
    }
    const toolChoice = this.toolChoice(body);
    const messages = body.messages.map(toMessage);
    const orphan = unmatchedToolResult(messages);
    if (orphan !== undefined) {
      throw ServiceError.invalid(
        `messages[${orphan}]: a tool message must answer a tool call of an earlier assistant message by its tool_call_id`,
        `messages[${orphan}].tool_call_id`,
      );
    }
    return {
      model: body.model,
      messages,
      temperature: body.temperature ?? 1,
      top_p: body.top_p ?? 1,
      max_tokens: maxTokens,
      n,
      stop: body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop,
      seed: body.seed ?? null,
      logprobs: body.logprobs === true,
      top_logprobs: body.top_logprobs ?? 0,
      response_format: body.response_format?.type === 'json_schema'
        ? { type: 'json_schema', json_schema: { ...(body.response_format.json_schema as JsonSchemaFormat) } }
        : { type: body.response_format?.type === 'json_object' ? 'json_object' : 'text' },
      tools: body.tools?.length ? (body.tools as FunctionTool[]) : null,
      tool_choice: toolChoice,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      return_token_ids: body.return_token_ids === true,
      chat_template_kwargs: body.chat_template_kwargs ?? null,
    };
  }

  /** tool_choice with OpenAI's default ("auto" with tools, "none" without), once it is known to fit the tools. */
  private toolChoice(body: ChatCompletionRequest): ToolChoice {
    const tools = body.tools ?? [];
    const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
    checkToolChoice(
      tools.map((tool) => tool.function.name),
      typeof choice === 'object' ? { name: choice.function.name } : choice,
      (i) => `tools[${i}].function.name`,
    );
    return choice;
  }
}

function toMessage(message: ChatMessageDto): ChatMessageInput {
  const content = Array.isArray(message.content) ? message.content.map((part) => part.text).join('') : (message.content ?? null);
  return {
    role: message.role,
    content,
    ...(message.name ? { name: message.name } : {}),
    ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}),
    ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
    ...(message.role === 'assistant' && message.reasoning_content ? { reasoning_content: message.reasoning_content } : {}),
  };
}
