import { Body, Controller, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { JsonBody } from '../http/json-body.guard';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatCompletionRequest } from './dto/chat-completion.request';

@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(private readonly completions: ChatCompletionsService) {}

  /** The known alias is the bare trailing slash; any single trailing segment is accepted. */
  @Post(['completions', 'completions/:segment'])
  @JsonBody()
  create(@CallerParam() caller: Caller, @Body() body: ChatCompletionRequest, @Res() res: Response): Promise<void> {
    return this.completions.create(caller, body, res);
  }
}
