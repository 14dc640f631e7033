import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { CheckpointRecord, GetModelRequest, ModelRecord, RecordCheckpointRequest, Subjects } from '@trainyard/contracts';
import { toModelRecord } from '../models/model-record';
import { ModelsService } from '../models/models.service';
import { AnnouncesModelChange } from '../resolve/announce-model-change.interceptor';
import { CheckpointRecorderService } from './checkpoint-recorder.service';

/** What training needs from the registry: a model by id (ownership checked) and recording a job's checkpoint. */
@Controller()
export class CheckpointRecorderController {
  constructor(
    private readonly models: ModelsService,
    private readonly recorder: CheckpointRecorderService,
  ) {}

  @MessagePattern(Subjects.registry.getModel.name)
  async getModel(@Payload() request: GetModelRequest): Promise<ModelRecord> {
    return toModelRecord(await this.models.getOwned(request.entity_id, request.model_id));
  }

  @MessagePattern(Subjects.registry.recordCheckpoint.name)
  @AnnouncesModelChange()
  record(@Payload() request: RecordCheckpointRequest): Promise<CheckpointRecord> {
    return this.recorder.record(request);
  }
}
