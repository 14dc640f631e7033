import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { ChatCompletionObject } from '@trainyard/contracts';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { JsonBody } from '../http/json-body.guard';
import { createValidationPipe } from '../http/validation.pipe';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatCompletionRequest } from './dto/chat-completion.request';
import { ExportTrafficRequest, UpdateChatCompletionRequest } from './dto/stored-completion.requests';
import { StoredCompletions } from './stored-completions';
import { TrafficExportService } from './traffic-export.service';

const validation = createValidationPipe();

@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(
    private readonly completions: ChatCompletionsService,
    private readonly stored: StoredCompletions,
    private readonly exports: TrafficExportService,
  ) {}

  @Post('completions')
  @JsonBody()
  create(@CallerParam() caller: Caller, @Body() body: ChatCompletionRequest, @Res() res: Response): Promise<void> {
    return this.completions.create(caller, body, res);
  }

  /**
   * One path, three meanings. A body with `messages` is a completion: the trailing-segment
   * alias api.md keeps (the known form is the bare trailing slash). Otherwise `export` exports
   * stored completions, and any other segment is a stored completion's id whose metadata
   * OpenAI's `chat.completions.update` sets.
   */
  @Post('completions/:segment')
  @HttpCode(200)
  @JsonBody()
  async segment(@CallerParam() caller: Caller, @Param('segment') segment: string, @Body() sent: unknown, @Res() res: Response): Promise<void> {
    // No body at all reads as an empty one: an update or export then names what it lacks.
    const raw = sent ?? {};
    const isObject = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
    if (!isObject || 'messages' in raw) return this.completions.create(caller, await validated(raw, ChatCompletionRequest), res);
    if (segment === 'export') return this.exports.export(caller, 'chat_completions', await validated(raw, ExportTrafficRequest), res);
    const body = await validated(raw, UpdateChatCompletionRequest);
    const updated: ChatCompletionObject = await this.stored.update(caller, segment, body.metadata ?? {});
    res.status(200).json(updated);
  }
}

/** The body checked as the global pipe checks a declared one: the route learns which it is only from the body. */
async function validated<T>(raw: unknown, type: new () => T): Promise<T> {
  return (await validation.transform(raw, { type: 'body', metatype: type })) as T;
}
