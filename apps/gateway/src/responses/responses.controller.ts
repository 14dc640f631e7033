import { Body, Controller, Delete, Get, Param, Post, Query, Res } from '@nestjs/common';
import type { DeleteResponseReply, ItemList, ResponseObject } from '@trainyard/contracts';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { ExportTrafficRequest } from '../chat/dto/stored-completion.requests';
import { TrafficExportService } from '../chat/traffic-export.service';
import { JsonBody } from '../http/json-body.guard';
import { CreateResponseRequest } from './dto/create-response.request';
import { ListItemsQuery } from './dto/list-items.query';
import { ResponsesService } from './responses.service';

@Controller('v1/responses')
export class ResponsesController {
  constructor(
    private readonly responses: ResponsesService,
    private readonly exports: TrafficExportService,
  ) {}

  @Post()
  @JsonBody()
  create(@CallerParam() caller: Caller, @Body() body: CreateResponseRequest, @Res() res: Response): Promise<void> {
    return this.responses.create(caller, body, res);
  }

  /** Stored responses as training data, as POST /v1/chat/completions/export exports stored chat completions. */
  @Post('export')
  @JsonBody()
  exportTraffic(@CallerParam() caller: Caller, @Body() body: ExportTrafficRequest, @Res() res: Response): Promise<void> {
    return this.exports.export(caller, 'responses', body, res);
  }

  @Get(':response_id')
  get(@CallerParam() caller: Caller, @Param('response_id') responseId: string): Promise<ResponseObject> {
    return this.responses.get(caller, responseId);
  }

  @Delete(':response_id')
  delete(@CallerParam() caller: Caller, @Param('response_id') responseId: string): Promise<DeleteResponseReply> {
    return this.responses.delete(caller, responseId);
  }

  @Get(':response_id/input_items')
  inputItems(@CallerParam() caller: Caller, @Param('response_id') responseId: string, @Query() query: ListItemsQuery): Promise<ItemList> {
    return this.responses.inputItems(caller, responseId, query);
  }
}
