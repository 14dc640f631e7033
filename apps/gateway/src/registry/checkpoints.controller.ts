import { Body, Controller, Delete, Get, Param, Query } from '@nestjs/common';
import { CheckpointRecord, DeleteCheckpointsReply, Page, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { scopeOf } from './caller-scope';
import { DeleteCheckpointsRequest } from './dto/delete-checkpoints.request';
import { ListCheckpointsQuery } from './dto/list-checkpoints.query';

@Controller('v1/preview/models/:model_id/checkpoints')
export class CheckpointsController {
  constructor(private readonly rpc: RpcClient) {}

  @Get()
  list(
    @CallerParam() caller: Caller,
    @Param('model_id') modelId: string,
    @Query() query: ListCheckpointsQuery,
  ): Promise<Page<CheckpointRecord>> {
    return this.rpc.request(Subjects.registry.listCheckpoints, { ...scopeOf(caller), model_id: modelId, ...query });
  }

  /** Idempotent, as the SDK retries DELETE: steps already gone come back in not_found_steps. */
  @Delete()
  delete(
    @CallerParam() caller: Caller,
    @Param('model_id') modelId: string,
    @Body() body: DeleteCheckpointsRequest,
  ): Promise<DeleteCheckpointsReply> {
    return this.rpc.request(Subjects.registry.deleteCheckpoints, { ...scopeOf(caller), model_id: modelId, steps: body.steps });
  }
}
