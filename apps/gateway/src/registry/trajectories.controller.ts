import { Controller, Get, Param, Query } from '@nestjs/common';
import { Page, Subjects, TrajectoryRecord } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { scopeOf } from './caller-scope';
import { ListTrajectoriesQuery } from './dto/list-trajectories.query';

/** Our addition: the trajectories a model was sent (POST .../log and RL jobs), as the registry keeps them. */
@Controller('v1/preview/models/:model_id/trajectories')
export class TrajectoriesController {
  constructor(private readonly rpc: RpcClient) {}

  @Get()
  list(@CallerParam() caller: Caller, @Param('model_id') modelId: string, @Query() query: ListTrajectoriesQuery): Promise<Page<TrajectoryRecord>> {
    return this.rpc.request(Subjects.registry.listTrajectories, { ...scopeOf(caller), model_id: modelId, ...query });
  }
}
