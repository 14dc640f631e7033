import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import {
  CreateTinkerModelRequest,
  CreateTinkerSessionRequest,
  ErrorCode,
  isUuid,
  RetrieveTinkerFutureRequest,
  ServiceError,
  Subjects,
  SubmitTinkerCallRequest,
  TinkerFutureReply,
  TinkerFutureState,
  TinkerSessionReply,
  TinkerSessionRequest,
  WorkQueues,
} from '@trainyard/contracts';
import { BlobStore, MessageBus, RpcClient } from '@trainyard/messaging';
import { trainingClientId } from '@trainyard/tinker';
import { randomUUID } from 'node:crypto';
import { TinkerRepository } from './tinker.repository';

/** The registry model name of a training client (`<session>:train:<n>` -> `<session>-train-<n>`): a name segment has no colons. */
export function registryName(clientId: string): string {
  return clientId.replace(/:/g, '-');
}

/** The registry project every Tinker training client's model lives in. */
export const TINKER_PROJECT = 'tinker';

/** Results larger than this travel to the gateway as a blob rather than in the reply. */
const INLINE_RESULT_BYTES = 256 * 1024;

/**
 * The Tinker API's sessions, training clients and futures, as the gateway asks for them. A
 * training client is a registry model of its own (project "tinker"), so its saved sampler
 * weights are that model's checkpoints. Calls are stored before they are queued: a crash
 * between the two is repaired at start, when every unfinished call is queued again (a second
 * message for a call is harmless: its claim is skipped once it is done).
 */
@Injectable()
export class TinkerService implements OnApplicationBootstrap {
  private readonly logger = new Logger(TinkerService.name);

  constructor(
    private readonly repo: TinkerRepository,
    private readonly rpc: RpcClient,
    private readonly bus: MessageBus,
    private readonly blobs: BlobStore,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const unfinished = await this.repo.unfinished();
    for (const { id } of unfinished) await this.enqueue(id, `${id}:restart:${Date.now()}`).catch((err: Error) => this.logger.warn(`Could not queue ${id} again: ${err.message}`));
    if (unfinished.length > 0) this.logger.log(`Queued ${unfinished.length} unfinished Tinker call(s) again`);
  }

  async createSession(request: CreateTinkerSessionRequest): Promise<TinkerSessionReply> {
    const id = randomUUID();
    await this.repo.createSession({ id, entityId: request.entity_id, tags: request.tags, userMetadata: request.user_metadata, sdkVersion: request.sdk_version });
    return { session_id: id };
  }

  async heartbeat(request: TinkerSessionRequest): Promise<Record<string, never>> {
    if (!isUuid(request.session_id) || !(await this.repo.heartbeat(request.entity_id, request.session_id))) throw ServiceError.notFound(`Session ${request.session_id} not found`);
    return {};
  }

  async createModel(request: CreateTinkerModelRequest): Promise<TinkerFutureReply> {
    if (!isUuid(request.session_id) || !(await this.repo.sessionExists(request.entity_id, request.session_id))) throw ServiceError.notFound(`Session ${request.session_id} not found`);
    const clientId = trainingClientId(request.session_id, request.model_seq_id);
    const model = await this.rpc.request(Subjects.registry.createModel, {
      entity_id: request.entity_id,
      entity_name: request.entity_name,
      entity: null,
      project: TINKER_PROJECT,
      name: registryName(clientId),
      base_model: request.base_model,
      return_existing: true,
    });
    const requestId = await this.repo.createClient(
      { id: clientId, sessionId: request.session_id, entityId: request.entity_id, modelId: model.id, baseModel: model.base_model, loraConfig: request.lora_config },
      randomUUID(),
    );
    return { request_id: requestId, model_id: clientId };
  }

  async submit(request: SubmitTinkerCallRequest): Promise<TinkerFutureReply> {
    const client = await this.repo.findClient(request.entity_id, request.model_id);
    if (!client) {
      await this.blobs.take(request.call).catch(() => undefined);
      throw ServiceError.notFound(`Training client ${request.model_id} not found`);
    }
    const call = await this.blobs.takeJson(request.call);
    // A state to load must exist now (a clear 404 at submit); the worker reads it when the call's turn comes.
    if (call.kind === 'load_weights' && !(await this.repo.findState(request.entity_id, call.path, false))) throw ServiceError.notFound(`No saved state at ${call.path}`);
    if (request.seq_id <= 0) throw ServiceError.invalid(`seq_id must be 1 or more, got ${request.seq_id}`, 'seq_id');
    const { id } = await this.repo.createCall({ id: randomUUID(), entityId: request.entity_id, clientId: client.id, kind: call.kind, seqId: request.seq_id, request: call });
    // Also for a repeated submit: the first may have been stored but not queued (JetStream drops
    // the duplicate of a message it has, by id).
    await this.enqueue(id);
    return { request_id: id, model_id: client.id };
  }

  async retrieve(request: RetrieveTinkerFutureRequest): Promise<TinkerFutureState> {
    const future = isUuid(request.request_id) ? await this.repo.findFuture(request.entity_id, request.request_id) : null;
    if (!future) throw ServiceError.notFound(`Future ${request.request_id} not found`);
    if (future.status === 'failed') {
      return { state: 'failed', kind: future.kind, error: future.error ?? 'failed', category: future.errorCategory === 'User' ? 'User' : future.errorCategory === 'Server' ? 'Server' : 'Unknown' };
    }
    if (future.status !== 'succeeded') return { state: 'pending', kind: future.kind };
    const result = await this.repo.result(future.id);
    if (!result) throw new ServiceError(ErrorCode.Internal, `Future ${future.id} succeeded without a result`);
    const json = JSON.stringify(result);
    if (json.length <= INLINE_RESULT_BYTES) return { state: 'succeeded', kind: future.kind, result };
    return { state: 'succeeded', kind: future.kind, result_blob: await this.blobs.putJson(result) };
  }

  private async enqueue(requestId: string, messageId = requestId): Promise<void> {
    try {
      await this.bus.enqueue(WorkQueues.tinker, { request_id: requestId }, { id: messageId });
    } catch (err) {
      // The call is stored: it is queued again when this service next starts.
      throw new ServiceError(ErrorCode.Unavailable, `The Tinker work queue is unavailable: ${(err as Error).message}`, { retryAfterSeconds: 5 });
    }
  }
}
