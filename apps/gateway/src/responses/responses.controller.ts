import { Body, Controller, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { JsonBody } from '../http/json-body.guard';
import { CreateResponseRequest } from './dto/create-response.request';
import { ResponsesService } from './responses.service';

@Controller('v1/responses')
export class ResponsesController {
  constructor(private readonly responses: ResponsesService) {}

  @Post()
  @JsonBody()
  create(@CallerParam() caller: Caller, @Body() body: CreateResponseRequest, @Res() res: Response): Promise<void> {
    return this.responses.create(caller, body, res);
  }
}
