import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { LogTrajectoriesReply, Subjects } from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { Idempotent } from '../idempotency/idempotent.decorator';
import { scopeOf } from './caller-scope';
import { LogTrajectoriesRequest } from './dto/log-trajectories.request';

@Controller('v1/preview/models/:model_id/log')
export class MetricsLogController {
  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
  ) {}

  /** Trajectory groups run to megabytes: they travel to the registry as a blob, not in the message. */
  @Post()
  @HttpCode(200)
  @Idempotent()
  async log(
    @CallerParam() caller: Caller,
    @Param('model_id') modelId: string,
    @Body() body: LogTrajectoriesRequest,
  ): Promise<LogTrajectoriesReply> {
    const groups = await this.blobs.putJson(body.trajectory_groups);
    return this.rpc.request(Subjects.registry.logTrajectories, {
      ...scopeOf(caller),
      model_id: modelId,
      split: body.split,
      trajectory_groups: groups,
    });
  }
}
