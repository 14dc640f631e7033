import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { DeleteModelReply, ModelRecord, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { Idempotent } from '../idempotency/idempotent.decorator';
import { scopeOf } from './caller-scope';
import { CreateModelRequest } from './dto/create-model.request';

@Controller('v1/preview/models')
export class ModelsController {
  constructor(private readonly rpc: RpcClient) {}

  /** Get-or-create with return_existing; registers checkpoint step 0 so the model serves at once. */
  @Post()
  @HttpCode(200)
  @Idempotent()
  async create(@CallerParam() caller: Caller, @Body() body: CreateModelRequest): Promise<Omit<ModelRecord, 'created'>> {
    const { created: _, ...model } = await this.rpc.request(Subjects.registry.createModel, { ...scopeOf(caller), ...body });
    return model;
  }

  /** Our addition: the caller's trainable models, oldest first (the console lists them). */
  @Get()
  async list(@CallerParam() caller: Caller): Promise<{ object: 'list'; data: ModelRecord[] }> {
    const { models } = await this.rpc.request(Subjects.registry.listModels, scopeOf(caller));
    return { object: 'list', data: models };
  }

  @Delete(':model_id')
  delete(@CallerParam() caller: Caller, @Param('model_id') modelId: string): Promise<DeleteModelReply> {
    return this.rpc.request(Subjects.registry.deleteModel, { ...scopeOf(caller), model_id: modelId });
  }
}
