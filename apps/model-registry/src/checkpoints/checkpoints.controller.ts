import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  CheckpointRecord,
  DeleteCheckpointsReply,
  DeleteCheckpointsRequest,
  ListCheckpointsRequest,
  Page,
  Subjects,
} from '@trainyard/contracts';
import { AnnouncesModelChange } from '../resolve/announce-model-change.interceptor';
import { CheckpointsService } from './checkpoints.service';

@Controller()
export class CheckpointsController {
  constructor(private readonly checkpoints: CheckpointsService) {}

  @MessagePattern(Subjects.registry.listCheckpoints.name)
  list(@Payload() request: ListCheckpointsRequest): Promise<Page<CheckpointRecord>> {
    return this.checkpoints.list(request);
  }

  @MessagePattern(Subjects.registry.deleteCheckpoints.name)
  @AnnouncesModelChange()
  delete(@Payload() request: DeleteCheckpointsRequest): Promise<DeleteCheckpointsReply> {
    return this.checkpoints.delete(request);
  }
}
