import { Inject, Injectable } from '@nestjs/common';
import { DeleteResponseReply, ErrorCode, InferenceEvent, ItemList, ResponseObject, ServiceError, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import type { Response } from 'express';
import type { Caller } from '../auth/caller';
import { CompletionRunner, foldEvents } from '../chat/completion-runner';
import { recorded, ServedTraceRecorder } from '../chat/served-trace.recorder';
import { GatewayConfig } from '../config/gateway.config';
import { httpStatus } from '../http/error-status';
import { openEventStream } from '../http/event-stream';
import { openAiEnvelope } from '../http/http-error.filter';
import { CreateResponseRequest } from './dto/create-response.request';
import { ListItemsQuery } from './dto/list-items.query';
import { ResponseAssembler, ResponseEcho, ResponseStreamEvent } from './response-assembler';
import { newId } from './response-items';
import { toChatParams, wantsLogprobs } from './response-request.mapper';
import { conversationIdOf, ResponseState } from './response-state';

/**
 * POST /v1/responses over the chat machinery: the request becomes the same start request as a
 * chat completion's, and the worker's events are folded into the Responses API's shapes, as
 * one `response` object or as its `response.*` Server-Sent Events. The stored state (earlier
 * turns, what `store` keeps) is the chat service's, reached through ResponseState.
 */
@Injectable()
export class ResponsesService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    private readonly runner: CompletionRunner,
    private readonly state: ResponseState,
    private readonly rpc: RpcClient,
  ) {}

  async create(caller: Caller, body: CreateResponseRequest, res: Response): Promise<void> {
    const input = await this.state.input(caller, body);
    const params = toChatParams(body, [...input.earlier, ...input.own], {
      defaultMaxTokens: this.config.DEFAULT_MAX_TOKENS,
      maxCompletionTokens: this.config.MAX_COMPLETION_TOKENS,
    });
    const id = newId('resp');
    const store = body.store !== false;
    let assembler: ResponseAssembler | undefined;
    try {
      await this.runner.run({ completionId: id, caller, params, logprobsRequested: wantsLogprobs(body), recordTokens: store }, res, async (started, served) => {
        const answer = new ResponseAssembler(id, started, echoOf(body));
        assembler = answer;
        // A stored response keeps the tokens it was served, for export as training data.
        const recorder = new ServedTraceRecorder(started, params);
        const events = store ? recorded(served, recorder) : served;
        const keep = () => this.state.keep(caller, body, answer.response() as ResponseObject, input, recorder.trace());
        res.setHeader('x-trainyard-checkpoint-step', started.checkpoint_step === null ? 'base' : String(started.checkpoint_step));
        if (body.stream) return this.stream(events, answer, res, keep);
        await foldEvents(events, answer);
        await keep();
        res.status(200).json(answer.response());
      });
    } catch (err) {
      if (!res.headersSent || !assembler) throw inResponsesTerms(err);
      // Mid-stream: the status line is gone, so the error travels as a last event.
      const error = err instanceof ServiceError ? err : new ServiceError(ErrorCode.Internal, 'Internal server error');
      const { message, code, param } = openAiEnvelope(error, httpStatus(error.code, true)).error;
      send(res, assembler.errorEvent({ message, code, param }));
      res.end();
    }
  }

  /**
   * The stream opens with the worker's prompt event (response.created): what is refused before
   * that is still answered with its own status, as for a request that is not streamed.
   */
  private async stream(events: AsyncIterable<InferenceEvent>, assembler: ResponseAssembler, res: Response, keep: () => Promise<void>): Promise<void> {
    // The last event waits for the response to be kept: a client that saw it end may continue it at once.
    let last: ResponseStreamEvent | undefined;
    await foldEvents(events, assembler, (event) => {
      if (event.type === 'response.completed' || event.type === 'response.incomplete') last = event;
      else send(res, event);
    });
    await keep();
    if (last) send(res, last);
    res.end();
  }

  get(caller: Caller, responseId: string): Promise<ResponseObject> {
    return this.rpc.request(Subjects.chat.getResponse, { entity_id: caller.entityId, response_id: responseId });
  }

  delete(caller: Caller, responseId: string): Promise<DeleteResponseReply> {
    return this.rpc.request(Subjects.chat.deleteResponse, { entity_id: caller.entityId, response_id: responseId });
  }

  inputItems(caller: Caller, responseId: string, query: ListItemsQuery): Promise<ItemList> {
    return this.rpc.request(Subjects.chat.listInputItems, { entity_id: caller.entityId, response_id: responseId, after: query.after, limit: query.limit, order: query.order });
  }
}

/** Fields the chat machinery names in its refusals, by the names a Responses client sent them under. */
const RESPONSES_FIELDS: Record<string, string> = { max_tokens: 'max_output_tokens', response_format: 'text.format', messages: 'input' };

/** Chat names a function's field `tools[i].function.f`; Responses tools are flat: `tools[i].f`. */
const flatToolFields = (text: string) => text.replace(/\btools\[(\d+)\]\.function\.(\w+)/g, 'tools[$1].$2');

/** A refusal from the chat machinery (the worker's JSON-mode budget, a schema it cannot compile) in the Responses request's terms. */
function inResponsesTerms(err: unknown): unknown {
  const param = err instanceof ServiceError ? err.details.param : undefined;
  if (!(err instanceof ServiceError) || param === undefined) return err;
  const renamed = flatToolFields(param) !== param ? flatToolFields(param) : RESPONSES_FIELDS[param.split('.')[0]];
  if (!renamed) return err;
  let message = flatToolFields(err.message.replace(/\b(max_tokens|response_format)\b/g, (field) => RESPONSES_FIELDS[field]));
  // The prompt Responses sent is its input (and instructions), not chat messages.
  if (err.code === ErrorCode.ContextLengthExceeded) message = message.replace(/\bthe messages\b/g, 'the input');
  return new ServiceError(err.code, message, { ...err.details, param: renamed });
}

/** One Server-Sent Event as the Responses API writes them: the event's type, then its JSON. */
function send(res: Response, event: ResponseStreamEvent): void {
  if (!res.headersSent) openEventStream(res);
  res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

function echoOf(body: CreateResponseRequest): ResponseEcho {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    text: { format: body.text?.format ? { ...body.text.format } : { type: 'text' } },
    tools: body.tools ?? [],
    tool_choice: body.tool_choice ?? 'auto',
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    user: body.user ?? null,
    store: body.store !== false,
    previous_response_id: body.previous_response_id ?? null,
    conversation: body.conversation == null ? null : { id: conversationIdOf(body.conversation) as string },
    metadata: body.metadata ?? {},
    top_logprobs: body.top_logprobs ?? null,
  };
}
