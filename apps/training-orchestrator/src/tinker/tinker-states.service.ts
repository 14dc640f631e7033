import { Inject, Injectable } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactNotFoundError, ArtifactStore } from '@trainyard/artifacts';
import { ServiceError, StoreTinkerStateRequest, TinkerStateReply, TinkerStateRequest, TinkerWeightsInfoReply } from '@trainyard/contracts';
import { TinkerRepository } from './tinker.repository';

/**
 * Tinker's saved states (save_state: the adapter and Adam's moments, one safetensors file). The
 * training worker stores the file in the artifact store; the row names it by digest, written
 * under the artifact references lock with the object checked still there, so the artifact
 * sweep (which keeps what rows name) never deletes a state's file under it.
 */
@Injectable()
export class TinkerStatesService {
  constructor(
    private readonly repo: TinkerRepository,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
  ) {}

  async save(request: StoreTinkerStateRequest): Promise<Record<string, never>> {
    const { sha256, bytes } = request.state;
    const stored = await this.repo.storeState(
      { id: request.request_id, entityId: request.entity_id, clientId: request.client_id, path: request.path, baseModel: request.base_model, loraConfig: request.lora_config, sha256, bytes },
      request.overwrite,
      () => this.stillStored(sha256),
    );
    if (!stored) throw ServiceError.conflict(`A state is already saved at ${request.path}; save under another name, or with overwrite=True`);
    return {};
  }

  async get(request: TinkerStateRequest): Promise<TinkerStateReply> {
    const state = await this.repo.findState(request.entity_id, request.path, true);
    if (!state) throw ServiceError.notFound(`No saved state at ${request.path}`);
    const sha256 = state.sha256 ?? (await this.moveToStore(state.id, state.data));
    return { path: state.path, base_model: state.baseModel, lora_config: state.loraConfig, sha256 };
  }

  async weightsInfo(request: TinkerStateRequest): Promise<TinkerWeightsInfoReply> {
    const state = await this.repo.findState(request.entity_id, request.path, false);
    if (!state) throw ServiceError.notFound(`No saved state at ${request.path}`);
    const lora = state.loraConfig;
    return { base_model: state.baseModel, is_lora: true, lora_rank: lora.rank, train_unembed: lora.train_unembed, train_mlp: lora.train_mlp, train_attn: lora.train_attn };
  }

  /** A state saved when its bytes lived in PostgreSQL: stored in the artifact store when first read, its row pointed at it. */
  private async moveToStore(id: string, data: Uint8Array | null): Promise<string> {
    if (!data) throw new Error(`Saved state ${id} has neither an object nor bytes`);
    const { sha256, bytes } = await this.store.put(data);
    await this.repo.moveStateToStore(id, { sha256, bytes }, () => this.stillStored(sha256));
    return sha256;
  }

  private async stillStored(sha256: string): Promise<void> {
    if (!(await this.store.has(sha256))) throw new ArtifactNotFoundError(sha256);
  }
}
