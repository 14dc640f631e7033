import { Controller, Get, Param } from '@nestjs/common';
import { ErrorCode, servingName, ServiceError, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { scopeOf } from './caller-scope';

interface OpenAiModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/**
 * OpenAI's model list, for SDK models.list(): base models, then the caller's trainable models;
 * and one model, for models.retrieve(), by any name chat completions accept.
 */
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
          id: servingName(m),
          object: 'model',
          created: m.created,
          owned_by: m.entity,
        })),
      ],
    };
  }

  /**
   * Model names hold slashes (`trainyard/tiny-chat`, `wandb-artifact:///e/p/n:step3`), sent raw
   * or percent-encoded (the SDK encodes them): the id is every segment after /v1/models, each
   * decoded, joined again. A name chat completions would not serve is a 404 model_not_found.
   */
  @Get('*id')
  async retrieve(@CallerParam() caller: Caller, @Param('id') segments: string[]): Promise<OpenAiModel> {
    const id = segments.join('/');
    const scope = scopeOf(caller);
    const resolved = await this.rpc.request(Subjects.registry.resolveModel, { ...scope, model: id });
    const { base_models, models } = await this.rpc.request(Subjects.registry.listModels, scope);
    const model = models.find((m) => m.id === resolved.model_id);
    if (model) return { id, object: 'model', created: model.created, owned_by: model.entity };
    const base = base_models.find((m) => m.id === resolved.base_model);
    if (resolved.model_id === null && base) return { id, object: 'model', created: base.created, owned_by: 'trainyard' };
    // Resolved, then gone before it could be listed (deleted in between).
    throw new ServiceError(ErrorCode.ModelNotFound, `The model \`${id}\` does not exist or you do not have access to it`, { param: 'model' });
  }
}
