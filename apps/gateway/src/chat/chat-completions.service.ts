import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CancelCompletion,
  ChatCompletionParams,
  ChatMessageInput,
  CompletionEnded,
  ErrorCode,
  InferenceEvent,
  ServiceError,
  Subjects,
} from '@trainyard/contracts';
import { NATS_CONNECTION, RpcClient } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import type { Response } from 'express';
import { JSONCodec, NatsConnection } from 'nats';
import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/caller';
import { GatewayConfig } from '../config/gateway.config';
import { CompletionAssembler } from './completion-assembler';
import { CompletionEventsHub, CompletionInbox } from './completion-events.hub';
import { CompletionEventsReader } from './completion-events.reader';
import { ChatCompletionRequest, ChatMessageDto } from './dto/chat-completion.request';
import { HTTP_STATUS_BY_CODE } from '../http/error-status';
import { openEventStream } from '../http/event-stream';
import { openAiEnvelope } from '../http/http-error.filter';

const cancellations = JSONCodec<CancelCompletion>();
const endings = JSONCodec<CompletionEnded>();

/**
 * The HTTP half of a chat completion: open the completion's inbox on the events hub, ask the
 * chat service to schedule it, then relay the worker's events as one response or as
 * Server-Sent Events. A client that goes away cancels the generation. However it ends, chat
 * is told the completion is over, so that its admission count frees the place. On shutdown, a
 * completion still running when the drain time is over ends with a 503 (or a last error
 * event, mid-stream) that says to retry, and its generation is cancelled.
 */
@Injectable()
export class ChatCompletionsService {
  private readonly logger = new Logger(ChatCompletionsService.name);
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly rpc: RpcClient,
    private readonly shutdown: GracefulShutdown,
    private readonly hub: CompletionEventsHub,
  ) {}

  async create(caller: Caller, body: ChatCompletionRequest, res: Response): Promise<void> {
    const params = this.normalize(body);
    const completionId = `chatcmpl-${randomUUID()}`;
    // Open first: the worker may answer before the start request returns.
    const inbox = this.hub.open(completionId);
    let finished = false;
    const cancel = () => {
      inbox.close();
      if (finished) return;
      finished = true;
      this.logger.log(`${completionId}: the client went away; cancelling`);
      this.nc.publish(Subjects.inference.cancel.name, cancellations.encode({ completion_id: completionId }));
    };
    res.on('close', cancel);
    try {
      const started = await this.rpc.request(Subjects.chat.startCompletion, {
        completion_id: completionId,
        entity_id: caller.entityId,
        entity_name: caller.entityName,
        logprobs_requested: body.logprobs ?? null,
        params,
        reply_subject: inbox.subject,
      });
      const assembler = new CompletionAssembler(completionId, started, { n: params.n, returnTokenIds: params.return_token_ids || started.logprobs });
      if (params.tools) assembler.withholdText();
      res.setHeader('x-trainyard-checkpoint-step', started.checkpoint_step === null ? 'base' : String(started.checkpoint_step));
      if (body.stream) await this.stream(inbox, assembler, res, body.stream_options?.include_usage === true);
      else res.status(200).json(await this.collect(inbox, assembler));
      finished = true;
    } catch (err) {
      cancel();
      if (!res.headersSent) throw err;
      // Mid-stream: the status line is gone, so the error travels as a last event.
      const error = err instanceof ServiceError ? err : new ServiceError(ErrorCode.Internal, 'Internal server error');
      res.write(`data: ${JSON.stringify(openAiEnvelope(error, HTTP_STATUS_BY_CODE[error.code]))}\n\n`);
      res.end();
    } finally {
      res.off('close', cancel);
      inbox.close();
      this.announceEnd(completionId);
    }
  }

  private announceEnd(completionId: string): void {
    try {
      this.nc.publish(Subjects.chat.completionEnded.name, endings.encode({ completion_id: completionId }));
    } catch (err) {
      // The connection is closing: chat releases the admission once no worker holds the completion.
      this.logger.warn(`${completionId}: could not announce its end: ${(err as Error).message}`);
    }
  }

  private async collect(inbox: CompletionInbox, assembler: CompletionAssembler): Promise<Record<string, unknown>> {
    for await (const event of this.events(inbox)) {
      assembler.apply(event);
      if (assembler.done) return assembler.response();
    }
    throw new ServiceError(ErrorCode.Unavailable, 'The completion ended without a result');
  }

  /**
   * The stream opens with the first chunk (the worker's prompt event): what is refused before
   * that (the prompt does not fit, JSON mode's budget, a template that cannot render these
   * messages) is still answered with its own status, as for a request that is not streamed.
   */
  private async stream(inbox: CompletionInbox, assembler: CompletionAssembler, res: Response, includeUsage: boolean): Promise<void> {
    const send = (data: string) => {
      if (!res.headersSent) openEventStream(res);
      res.write(`data: ${data}\n\n`);
    };
    for await (const event of this.events(inbox)) {
      for (const chunk of assembler.apply(event)) send(JSON.stringify(chunk));
      if (assembler.done) {
        if (includeUsage) send(JSON.stringify(assembler.usageChunk()));
        send('[DONE]');
        res.end();
        return;
      }
    }
  }

  /** The worker's events in order; an `error` event, a silent, gone or lossy worker ends it with a ServiceError. */
  private async *events(inbox: CompletionInbox): AsyncGenerator<InferenceEvent> {
    const reader = new CompletionEventsReader(this.nc, inbox, {
      idleTimeoutMs: this.config.COMPLETION_IDLE_TIMEOUT_MS,
      probeAfterMs: this.config.COMPLETION_PROBE_AFTER_MS,
    });
    const drain = this.drainOver();
    try {
      while (true) {
        const next = await Promise.race([reader.next(), drain.over]);
        if (next.done) return;
        const event = next.value;
        if (event.type === 'error') throw ServiceError.fromWire(event.error) ?? new ServiceError(ErrorCode.Internal, 'Generation failed');
        yield event;
      }
    } finally {
      drain.forget();
    }
  }

  /**
   * Rejects once the shutdown's drain time is over, for one completion to race its events
   * against. One per completion, let go when it ends: every race leaves a reaction on a promise
   * that never settles, holding the event that won it, for as long as that promise lives.
   */
  private drainOver(): { over: Promise<never>; forget: () => void } {
    const expired = this.shutdown.expired;
    let fail = (): void => undefined;
    const over = new Promise<never>((_, reject) => {
      fail = () => reject(new ServiceError(ErrorCode.Unavailable, 'The server is shutting down; retry the request', { retryAfterSeconds: 1 }));
    });
    over.catch(() => undefined);
    onAbort(expired, fail);
    return { over, forget: () => expired.removeEventListener('abort', fail) };
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
    const tools = body.tools?.length && body.tool_choice !== 'none' ? body.tools : null;
    return {
      model: body.model,
      messages: body.messages.map(toMessage),
      temperature: body.temperature ?? 1,
      top_p: body.top_p ?? 1,
      max_tokens: maxTokens,
      n,
      stop: body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop,
      seed: body.seed ?? null,
      logprobs: body.logprobs === true,
      top_logprobs: body.top_logprobs ?? 0,
      response_format: body.response_format?.type === 'json_schema'
        ? { type: 'json_schema', json_schema: { ...(body.response_format.json_schema as { name: string }) } }
        : { type: body.response_format?.type === 'json_object' ? 'json_object' : 'text' },
      tools,
      tool_choice: body.tool_choice ?? null,
      return_token_ids: body.return_token_ids === true,
    };
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
  };
}
