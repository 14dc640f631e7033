import { Injectable } from '@nestjs/common';
import { ClaimTinkerCallReply, ClaimTinkerCallRequest, CompleteTinkerCallRequest, servingName } from '@trainyard/contracts';
import { BlobStore } from '@trainyard/messaging';
import { ClientRow, TinkerRepository } from './tinker.repository';
import { TINKER_PROJECT, registryName } from './tinker.service';

/**
 * A worker that has not claimed or finished a call of a training client for this long no
 * longer holds it: another worker may take the client over (and, since the adapter, gradients
 * and optimizer state were in the first one's memory, finds them lost).
 */
export const CLIENT_HOLD_MS = 5 * 60_000;

/**
 * The workers' side of Tinker calls. A call runs only when it is its client's next one
 * (seq_id = applied + 1), so calls are applied in seq_id order whatever order they arrived in,
 * and only on the worker that holds the client's state. Where that state is gone (its worker
 * stopped after the client's first call), the call and every later one fail with an error that
 * says so: a lost accumulation is an error, never a silently different model.
 */
@Injectable()
export class TinkerCallsService {
  constructor(
    private readonly repo: TinkerRepository,
    private readonly blobs: BlobStore,
  ) {}

  async claim({ request_id, worker }: ClaimTinkerCallRequest): Promise<ClaimTinkerCallReply> {
    const decision = await this.repo.withLockedCall(request_id, async (tx, future, client): Promise<ClaimTinkerCallReply | { run: ClientRow; seqId: number }> => {
      if (!future || !client || future.seqId === null) return { action: 'skip', reason: 'no such call' };
      if (future.status === 'succeeded' || future.status === 'failed') return { action: 'skip', reason: `already ${future.status}` };
      if (client.lostReason) {
        await this.repo.finish(tx, future, { error: client.lostReason, category: 'Server' }, {});
        return { action: 'skip', reason: 'the client state was lost' };
      }
      if (future.seqId !== client.appliedSeq + 1) {
        return { action: 'wait', reason: `call ${future.seqId} waits for call ${client.appliedSeq + 1} of ${client.id}` };
      }
      const held = client.worker !== null && client.worker !== worker && client.workerSeenAt !== null && Date.now() - client.workerSeenAt.getTime() < CLIENT_HOLD_MS;
      if (held) return { action: 'wait', reason: `${client.id} is held by worker ${client.worker}` };
      if (client.worker !== null && client.worker !== worker && client.appliedSeq > 0) {
        const lost =
          `The training client ${client.id} lost its state (adapter, accumulated gradients and optimizer moments): the worker that held it ` +
          `(${client.worker}) stopped. Create a new training client, or load the last saved weights into one.`;
        await this.repo.finish(tx, future, { error: lost, category: 'Server' }, { lostReason: lost });
        return { action: 'skip', reason: 'the client state was lost' };
      }
      await this.repo.markRunning(tx, future.id, client.id, worker);
      return { run: client, seqId: future.seqId };
    });
    if (!('run' in decision)) return decision;
    const call = await this.repo.request(request_id);
    if (!call) return { action: 'skip', reason: 'the call has no request' };
    const client = decision.run;
    return {
      action: 'run',
      call: {
        request_id,
        seq_id: decision.seqId,
        client_id: client.id,
        entity_id: client.entityId,
        entity_name: client.entityName,
        model_id: client.modelId,
        model_name: servingName({ entity: client.entityName, project: TINKER_PROJECT, name: registryName(client.id) }),
        base_model: client.baseModel,
        lora_config: client.loraConfig,
        applied_seq: client.appliedSeq,
        call: await this.blobs.putJson(call),
      },
    };
  }

  async complete(request: CompleteTinkerCallRequest): Promise<Record<string, never>> {
    const result = request.outcome === 'succeeded' ? await this.blobs.takeJson(request.result) : null;
    await this.repo.withLockedCall(request.request_id, async (tx, future) => {
      if (!future || future.status === 'succeeded' || future.status === 'failed') return;
      if (request.outcome === 'succeeded') {
        await this.repo.finish(tx, future, { result: result! }, { worker: request.worker });
      } else {
        await this.repo.finish(tx, future, { error: request.error, category: request.category }, { worker: request.worker, lostReason: request.state_lost ? request.error : undefined });
      }
    });
    return {};
  }
}
