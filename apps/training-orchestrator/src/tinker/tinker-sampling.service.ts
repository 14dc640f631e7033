import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import {
  CallerScope,
  ErrorCode,
  ResolveTinkerSamplerReply,
  ResolveTinkerSamplerRequest,
  ServiceError,
  Subjects,
  SubmitTinkerSampleRequest,
  TinkerFutureReply,
  TinkerSampleCall,
} from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { parseSamplerWeightsPath } from '@trainyard/tinker';
import { randomUUID } from 'node:crypto';
import { TinkerRepository } from './tinker.repository';

/** How long a sampling may take in chat (its completion deadline, 120 s by default, and a margin). */
const SAMPLE_TIMEOUT_MS = 150_000;

/** Errors that are the caller's to fix, as the SDK's RequestFailedResponse categorises them. */
const USER_ERRORS: readonly string[] = [ErrorCode.InvalidRequest, ErrorCode.ModelNotFound, ErrorCode.NotFound, ErrorCode.ContextLengthExceeded];

/**
 * Tinker's sampling: sampler weights named by their tinker:// path, and asample as a future
 * kept in PostgreSQL beside the training calls' (so any gateway replica answers its poll). The
 * sampling itself is chat's token sampling (`chat.tokens.sample.v1`), run from here as soon as
 * the future is stored; a sampling whose orchestrator stopped is run again at the next start.
 */
@Injectable()
export class TinkerSamplingService implements OnApplicationBootstrap {
  private readonly logger = new Logger(TinkerSamplingService.name);

  constructor(
    private readonly repo: TinkerRepository,
    private readonly rpc: RpcClient,
  ) {}

  onApplicationBootstrap(): void {
    void this.repo.unfinishedSamples().then(
      (samples) => {
        for (const { id, scope, call } of samples) void this.run(id, scope, call);
        if (samples.length > 0) this.logger.log(`Sampling ${samples.length} unfinished Tinker sampling(s) again`);
      },
      (err: Error) => this.logger.warn(`Could not read unfinished samplings: ${err.message}`),
    );
  }

  async resolveSampler(request: ResolveTinkerSamplerRequest): Promise<ResolveTinkerSamplerReply> {
    const parsed = parseSamplerWeightsPath(request.path);
    if (!parsed) throw ServiceError.invalid(`model_path ${JSON.stringify(request.path)} is not a tinker://<model_id>/sampler_weights/<name> path`, 'model_path');
    const client = await this.repo.findClient(request.entity_id, parsed.modelId);
    const saved = client ? (await this.repo.samplerWeights(request.entity_id, client.id)).find((w) => w.path === request.path) : undefined;
    if (!client || !saved) throw ServiceError.notFound(`No sampler weights at ${request.path}`);
    return { model: saved.model, base_model: client.baseModel };
  }

  async submit(request: SubmitTinkerSampleRequest): Promise<TinkerFutureReply> {
    const id = randomUUID();
    const scope = { entity_id: request.entity_id, entity_name: request.entity_name };
    await this.repo.createSample({ id, scope, call: request.sample });
    void this.run(id, scope, request.sample);
    return { request_id: id };
  }

  private async run(id: string, scope: CallerScope, call: TinkerSampleCall): Promise<void> {
    try {
      const reply = await this.rpc.request(Subjects.chat.sampleTokens, { request_id: id, ...scope, ...call }, { timeoutMs: SAMPLE_TIMEOUT_MS });
      const { sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens } = reply;
      await this.repo.finishSample(id, { result: { sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens } });
    } catch (err) {
      const user = err instanceof ServiceError && USER_ERRORS.includes(err.code);
      const message = err instanceof ServiceError ? err.message : `Sampling failed: ${(err as Error).message}`;
      await this.repo.finishSample(id, { error: message, category: user ? 'User' : 'Server' }).catch((e: Error) => this.logger.error(`sampling ${id}: could not store its failure: ${e.message}`));
    }
  }
}
