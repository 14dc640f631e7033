import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  ListTrajectoriesRequest,
  Page,
  RecordTrajectoriesReply,
  RecordTrajectoriesRequest,
  StoredTrajectoryGroups,
  StoreJobTrajectoriesRequest,
  Subjects,
  TrajectoryRecord,
} from '@trainyard/contracts';
import { TrajectoriesService } from './trajectories.service';

@Controller()
export class TrajectoriesController {
  constructor(private readonly trajectories: TrajectoriesService) {}

  @MessagePattern(Subjects.registry.storeJobTrajectories.name)
  storeJobGroups(@Payload() request: StoreJobTrajectoriesRequest): Promise<StoredTrajectoryGroups> {
    return this.trajectories.storeJobGroups(request);
  }

  @MessagePattern(Subjects.registry.recordTrajectories.name)
  record(@Payload() request: RecordTrajectoriesRequest): Promise<RecordTrajectoriesReply> {
    return this.trajectories.record(request);
  }

  @MessagePattern(Subjects.registry.listTrajectories.name)
  list(@Payload() request: ListTrajectoriesRequest): Promise<Page<TrajectoryRecord>> {
    return this.trajectories.list(request);
  }
}
