import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { ListBaseModelsReply, Subjects } from '@trainyard/contracts';
import { BaseModelsService } from './base-models.service';

@Controller()
export class BaseModelsController {
  constructor(private readonly baseModels: BaseModelsService) {}

  @MessagePattern(Subjects.registry.listBaseModels.name)
  async list(): Promise<ListBaseModelsReply> {
    const models = await this.baseModels.list();
    return { base_models: models.map(({ id, architecture, created, unsupported }) => ({ id, architecture, created, unsupported })) };
  }
}
