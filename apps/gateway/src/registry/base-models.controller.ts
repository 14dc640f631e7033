import { Controller, Get } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';

@Controller('v1/preview')
export class BaseModelsController {
  constructor(private readonly rpc: RpcClient) {}

  /** The base model ids this deployment can train and serve. */
  @Get('base-models')
  async list(): Promise<string[]> {
    const { base_models } = await this.rpc.request(Subjects.registry.listBaseModels, {});
    return base_models.map((m) => m.id);
  }
}
