import { Controller, Get } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { scopeOf } from './caller-scope';

interface OpenAiModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** OpenAI's model list, for SDK models.list(): base models, then the caller's trainable models. */
@Controller('v1/models')
export class OpenAiModelsController {
  constructor(private readonly rpc: RpcClient) {}

  @Get()
  async list(@CallerParam() caller: Caller): Promise<{ object: 'list'; data: OpenAiModel[] }> {
    const { base_models, models } = await this.rpc.request(Subjects.registry.listModels, scopeOf(caller));
    return {
      object: 'list',
      data: [
        ...base_models.map((m): OpenAiModel => ({ id: m.id, object: 'model', created: m.created, owned_by: 'trainyard' })),
        // Listed by the name chat completions accept, which follows the newest checkpoint.
        ...models.map((m): OpenAiModel => ({
          id: `wandb-artifact:///${m.entity}/${m.project}/${m.name}`,
          object: 'model',
          created: m.created,
          owned_by: m.entity,
        })),
      ],
    };
  }
}
