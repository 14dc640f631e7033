import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  CreateModelRequest,
  DeleteModelReply,
  DeleteModelRequest,
  ListModelsReply,
  ListModelsRequest,
  ModelRecord,
  Subjects,
} from '@trainyard/contracts';
import { AnnouncesModelChange } from '../resolve/announce-model-change.interceptor';
import { ModelsService } from './models.service';

@Controller()
export class ModelsController {
  constructor(private readonly models: ModelsService) {}

  @MessagePattern(Subjects.registry.createModel.name)
  create(@Payload() request: CreateModelRequest): Promise<ModelRecord> {
    return this.models.create(request);
  }

  @MessagePattern(Subjects.registry.deleteModel.name)
  @AnnouncesModelChange()
  delete(@Payload() request: DeleteModelRequest): Promise<DeleteModelReply> {
    return this.models.delete(request.entity_id, request.model_id);
  }

  @MessagePattern(Subjects.registry.listModels.name)
  list(@Payload() request: ListModelsRequest): Promise<ListModelsReply> {
    return this.models.list(request.entity_id);
  }
}
