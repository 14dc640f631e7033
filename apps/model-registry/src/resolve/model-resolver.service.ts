import { Injectable } from '@nestjs/common';
import { ErrorCode, ResolveModelReply, ResolveModelRequest, ServiceError } from '@trainyard/contracts';
import { AdapterFiles } from '../artifacts/adapter-files';
import { BaseModelBundles } from '../base-models/base-model-bundles';
import { BaseModelsService, InstalledBaseModel } from '../base-models/base-models.service';
import { CheckpointRepository } from '../checkpoints/checkpoint.repository';
import { ModelRepository } from '../models/model.repository';
import { parseModelName } from './model-name';

/**
 * Turns the model name of a chat completion into what to load. A name the caller may not
 * see is answered exactly like a name that does not exist: another entity's models are
 * never revealed, let alone served.
 */
@Injectable()
export class ModelResolverService {
  constructor(
    private readonly baseModels: BaseModelsService,
    private readonly models: ModelRepository,
    private readonly checkpoints: CheckpointRepository,
    private readonly adapters: AdapterFiles,
    private readonly baseBundles: BaseModelBundles,
  ) {}

  async resolve(request: ResolveModelRequest): Promise<ResolveModelReply> {
    const parsed = parseModelName(request.model);
    const notFound = (why = 'does not exist or you do not have access to it') =>
      new ServiceError(ErrorCode.ModelNotFound, `The model \`${request.model}\` ${why}`, { param: 'model' });
    if (!parsed) throw notFound();

    // An installed model the engine cannot load is the request's problem, said before any worker tries: never "try again later".
    const servable = (base: InstalledBaseModel) => {
      if (base.unsupported) throw ServiceError.invalid(`The model \`${request.model}\` cannot be served by this engine: ${base.unsupported} (config.json of \`${base.id}\`)`, 'model');
      return base;
    };
    if (parsed.kind === 'base') {
      const found = await this.baseModels.find(parsed.id);
      if (!found) throw notFound();
      const base = servable(found);
      return { base_model: base.id, base_model_dir: base.dir, base_model_bundle: await this.baseBundles.bundleOf(base), model_id: null, step: null, adapter_bundle: null, adapter_sha256: null };
    }

    if (parsed.entity !== request.entity_name) throw notFound();
    const model = await this.models.findByName(request.entity_id, parsed.project, parsed.name);
    if (!model) throw notFound();
    const checkpoint =
      parsed.selector.kind === 'latest'
        ? await this.checkpoints.latest(model.id)
        : await this.checkpoints.findStep(model.id, parsed.selector.step);
    if (!checkpoint) throw parsed.selector.kind === 'step' ? notFound(`has no checkpoint at step ${parsed.selector.step}`) : notFound();
    const found = await this.baseModels.find(model.baseModel);
    if (!found) throw notFound(`cannot be served: its base model "${model.baseModel}" is not installed`);
    const base = servable(found);
    return {
      base_model: base.id,
      base_model_dir: base.dir,
      base_model_bundle: await this.baseBundles.bundleOf(base),
      model_id: model.id,
      step: checkpoint.step,
      adapter_bundle: await this.adapters.bundleOf(checkpoint.adapterPath, (adapter) =>
        this.checkpoints.setAdapter(checkpoint.id, checkpoint.adapterPath, adapter, () => this.adapters.assertStored(adapter)),
      ),
      adapter_sha256: checkpoint.adapterSha256,
    };
  }
}
