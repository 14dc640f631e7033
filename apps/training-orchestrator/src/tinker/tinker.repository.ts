import { Injectable } from '@nestjs/common';
import { lockReferencesShared, packJson, Prisma, PrismaService, StillStored, unpackJson } from '@trainyard/db';
import type { CallerScope, TinkerCall, TinkerFutureKind, TinkerLoraConfig, TinkerResult, TinkerSampleCall, TinkerSaveWeightsResult } from '@trainyard/contracts';

export type FutureStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface FutureRow {
  id: string;
  entityId: string;
  clientId: string | null;
  kind: TinkerFutureKind;
  seqId: number | null;
  status: FutureStatus;
  error: string | null;
  errorCategory: string | null;
}

export interface ClientRow {
  id: string;
  sessionId: string;
  entityId: string;
  entityName: string;
  modelId: string;
  baseModel: string;
  loraConfig: TinkerLoraConfig;
  appliedSeq: number;
  worker: string | null;
  workerSeenAt: Date | null;
  lostReason: string | null;
}

type Tx = Prisma.TransactionClient;

const FUTURE_FIELDS = { id: true, entityId: true, clientId: true, kind: true, seqId: true, status: true, error: true, errorCategory: true } as const;

/** Tinker sessions, training clients and futures. */
@Injectable()
export class TinkerRepository {
  constructor(private readonly prisma: PrismaService) {}

  createSession(session: { id: string; entityId: string; tags: string[]; userMetadata: Record<string, unknown>; sdkVersion: string | null }): Promise<unknown> {
    return this.prisma.tinkerSession.create({
      data: { ...session, userMetadata: session.userMetadata as Prisma.InputJsonValue },
    });
  }

  /** Records a heartbeat; false when the entity has no such session. */
  async heartbeat(entityId: string, sessionId: string): Promise<boolean> {
    const { count } = await this.prisma.tinkerSession.updateMany({ where: { id: sessionId, entityId }, data: { lastHeartbeatAt: new Date() } });
    return count === 1;
  }

  sessionExists(entityId: string, sessionId: string): Promise<boolean> {
    return this.prisma.tinkerSession.count({ where: { id: sessionId, entityId } }).then((n) => n === 1);
  }

  /** The training client and, in the same transaction, its create_model future (done at once); repeating it changes nothing. */
  async createClient(client: { id: string; sessionId: string; entityId: string; modelId: string; baseModel: string; loraConfig: TinkerLoraConfig }, futureId: string): Promise<string> {
    return this.prisma.$transaction(async (tx) => {
      const existing = await tx.tinkerTrainingClient.findUnique({ where: { id: client.id }, select: { id: true } });
      if (!existing) {
        await tx.tinkerTrainingClient.create({ data: { ...client, loraConfig: client.loraConfig as unknown as Prisma.InputJsonValue } });
      }
      const future = await tx.tinkerFuture.findUnique({ where: { clientId_seqId: { clientId: client.id, seqId: 0 } }, select: { id: true } });
      if (future) return future.id;
      await tx.tinkerFuture.create({
        data: {
          id: futureId,
          entityId: client.entityId,
          clientId: client.id,
          kind: 'create_model',
          // create_model holds seq 0: the client's calls start at 1.
          seqId: 0,
          status: 'succeeded',
          result: packJson({ model_id: client.id }) as unknown as Prisma.InputJsonValue,
          completedAt: new Date(),
        },
      });
      return futureId;
    });
  }

  async findClient(entityId: string, clientId: string): Promise<ClientRow | null> {
    const row = await this.prisma.tinkerTrainingClient.findFirst({ where: { id: clientId, entityId }, include: { session: { include: { entity: true } } } });
    return row && toClientRow(row);
  }

  /** The entity's training clients, newest first, a page of them and how many there are. */
  async listClients(entityId: string, limit: number, offset: number): Promise<{ rows: (ClientRow & { createdAt: Date })[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.prisma.tinkerTrainingClient.findMany({ where: { entityId }, include: { session: { include: { entity: true } } }, orderBy: { createdAt: 'desc' }, take: limit, skip: offset }),
      this.prisma.tinkerTrainingClient.count({ where: { entityId } }),
    ]);
    return { rows: rows.map((r) => ({ ...toClientRow(r), createdAt: r.createdAt })), total };
  }

  /** When each client was last called (its newest future), by client id. */
  async lastRequestTimes(clientIds: string[]): Promise<Map<string, Date>> {
    const rows = await this.prisma.tinkerFuture.groupBy({ by: ['clientId'], where: { clientId: { in: clientIds } }, _max: { createdAt: true } });
    return new Map(rows.filter((r) => r.clientId && r._max.createdAt).map((r) => [r.clientId as string, r._max.createdAt as Date]));
  }

  /** What a client saved: sampler weights (with when) and states (with when and their size), oldest first. */
  async savedBy(entityId: string, clientId: string): Promise<{ sampler: { path: string; at: Date }[]; states: { path: string; at: Date; bytes: number }[] }> {
    const [futures, states] = await Promise.all([
      this.prisma.tinkerFuture.findMany({
        where: { entityId, clientId, kind: 'save_weights_for_sampler', status: 'succeeded' },
        select: { result: true, completedAt: true, createdAt: true },
        orderBy: { createdAt: 'asc' },
      }),
      this.prisma.$queryRaw<{ path: string; created_at: Date; bytes: number }[]>`
        SELECT path, created_at, COALESCE(bytes, octet_length(data))::integer AS bytes FROM tinker_saved_states
        WHERE entity_id = ${entityId}::uuid AND client_id = ${clientId} ORDER BY created_at ASC`,
    ]);
    return {
      sampler: futures.filter((f) => f.result).map((f) => ({ path: (unpackJson(f.result) as TinkerSaveWeightsResult).path, at: f.completedAt ?? f.createdAt })),
      states: states.map((s) => ({ path: s.path, at: s.created_at, bytes: s.bytes })),
    };
  }

  /** Stores a call; a second submit of the same (client, seq_id) returns the first future's id. */
  async createCall(future: { id: string; entityId: string; clientId: string; kind: TinkerFutureKind; seqId: number; request: TinkerCall }): Promise<{ id: string; created: boolean }> {
    try {
      await this.prisma.tinkerFuture.create({
        data: { ...future, request: packJson(future.request) as unknown as Prisma.InputJsonValue },
      });
      return { id: future.id, created: true };
    } catch (err) {
      if (!(err instanceof Prisma.PrismaClientKnownRequestError) || err.code !== 'P2002') throw err;
      const first = await this.prisma.tinkerFuture.findUnique({ where: { clientId_seqId: { clientId: future.clientId, seqId: future.seqId } }, select: { id: true } });
      if (!first) throw err;
      return { id: first.id, created: false };
    }
  }

  findFuture(entityId: string, id: string): Promise<FutureRow | null> {
    return this.prisma.tinkerFuture.findFirst({ where: { id, entityId }, select: FUTURE_FIELDS }) as Promise<FutureRow | null>;
  }

  async result(id: string): Promise<TinkerResult | null> {
    const row = await this.prisma.tinkerFuture.findUnique({ where: { id }, select: { result: true } });
    return row?.result ? (unpackJson(row.result) as TinkerResult) : null;
  }

  async request(id: string): Promise<TinkerCall | null> {
    const row = await this.prisma.tinkerFuture.findUnique({ where: { id }, select: { request: true } });
    return row?.request ? (unpackJson(row.request) as TinkerCall) : null;
  }

  /** Calls not yet done: at start they are queued again, since a crash may have lost their messages. */
  unfinished(): Promise<{ id: string }[]> {
    return this.prisma.tinkerFuture.findMany({ where: { status: { in: ['queued', 'running'] }, kind: { not: 'sample' } }, select: { id: true }, orderBy: { createdAt: 'asc' } });
  }

  /** A sampling, stored as running: the orchestrator runs it through chat at once. */
  async createSample(sample: { id: string; scope: CallerScope; call: TinkerSampleCall }): Promise<void> {
    await this.prisma.tinkerFuture.create({
      data: { id: sample.id, entityId: sample.scope.entity_id, kind: 'sample', status: 'running', request: packJson({ scope: sample.scope, call: sample.call }) as unknown as Prisma.InputJsonValue },
    });
  }

  /** Samplings not yet done (their orchestrator stopped): each with what it was asked. */
  async unfinishedSamples(): Promise<{ id: string; scope: CallerScope; call: TinkerSampleCall }[]> {
    const rows = await this.prisma.tinkerFuture.findMany({ where: { status: { in: ['queued', 'running'] }, kind: 'sample' }, select: { id: true, request: true }, orderBy: { createdAt: 'asc' } });
    return rows.filter((r) => r.request).map((r) => ({ id: r.id, ...(unpackJson(r.request) as { scope: CallerScope; call: TinkerSampleCall }) }));
  }

  /** A sampling's outcome; a sampling already done (by another orchestrator) keeps its first. */
  async finishSample(id: string, outcome: { result: TinkerResult } | { error: string; category: string }): Promise<void> {
    await this.prisma.tinkerFuture.updateMany({
      where: { id, status: { in: ['queued', 'running'] } },
      data:
        'result' in outcome
          ? { status: 'succeeded', result: packJson(outcome.result) as unknown as Prisma.InputJsonValue, request: Prisma.DbNull, completedAt: new Date() }
          : { status: 'failed', error: outcome.error, errorCategory: outcome.category, request: Prisma.DbNull, completedAt: new Date() },
    });
  }

  /** The sampler weights a training client saved (save_weights_for_sampler's results), newest first. */
  async samplerWeights(entityId: string, clientId: string): Promise<TinkerSaveWeightsResult[]> {
    const rows = await this.prisma.tinkerFuture.findMany({
      where: { entityId, clientId, kind: 'save_weights_for_sampler', status: 'succeeded' },
      select: { result: true },
      orderBy: { createdAt: 'desc' },
    });
    return rows.filter((r) => r.result).map((r) => unpackJson(r.result) as TinkerSaveWeightsResult);
  }

  /**
   * Keeps a saved state. A second save of one call keeps the first; another call's save under a
   * path already taken replaces it only with `overwrite`, else returns false. Written under the
   * artifact references lock, with `stillStored` checking the state's object is there.
   */
  async storeState(
    state: { id: string; entityId: string; clientId: string; path: string; baseModel: string; loraConfig: TinkerLoraConfig; sha256: string; bytes: number },
    overwrite: boolean,
    stillStored: StillStored,
  ): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      const existing = await tx.tinkerSavedState.findUnique({ where: { entityId_path: { entityId: state.entityId, path: state.path } }, select: { id: true } });
      if (existing?.id === state.id) return true;
      if (existing && !overwrite) return false;
      await stillStored();
      if (existing) await tx.tinkerSavedState.delete({ where: { id: existing.id } });
      await tx.tinkerSavedState.create({ data: { ...state, loraConfig: state.loraConfig as unknown as Prisma.InputJsonValue } });
      return true;
    });
  }

  /** Points a state saved with its bytes in the row at its object in the artifact store, and drops the bytes. */
  async moveStateToStore(id: string, object: { sha256: string; bytes: number }, stillStored: StillStored): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      await tx.tinkerSavedState.update({ where: { id }, data: { sha256: object.sha256, bytes: object.bytes, data: null } });
    });
  }

  async findState(
    entityId: string,
    path: string,
    withData: boolean,
  ): Promise<{ id: string; path: string; baseModel: string; loraConfig: TinkerLoraConfig; sha256: string | null; data: Uint8Array | null } | null> {
    const row = await this.prisma.tinkerSavedState.findUnique({
      where: { entityId_path: { entityId, path } },
      select: { id: true, path: true, baseModel: true, loraConfig: true, sha256: true, data: withData },
    });
    if (!row) return null;
    return { id: row.id, path: row.path, baseModel: row.baseModel, loraConfig: row.loraConfig as unknown as TinkerLoraConfig, sha256: row.sha256, data: (row as { data?: Uint8Array | null }).data ?? null };
  }

  /** Runs `fn` with the future and its client locked (FOR UPDATE), so that claims and completions of one client are serialised. */
  async withLockedCall<T>(id: string, fn: (tx: Tx, future: FutureRow | null, client: ClientRow | null) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(async (tx) => {
      const future = (await tx.tinkerFuture.findUnique({ where: { id }, select: FUTURE_FIELDS })) as FutureRow | null;
      if (!future?.clientId) return fn(tx, future, null);
      await tx.$queryRaw`SELECT id FROM tinker_training_clients WHERE id = ${future.clientId} FOR UPDATE`;
      const client = await tx.tinkerTrainingClient.findUnique({ where: { id: future.clientId }, include: { session: { include: { entity: true } } } });
      return fn(tx, future, client && toClientRow(client));
    });
  }

  markRunning(tx: Tx, futureId: string, clientId: string, worker: string): Promise<unknown> {
    return Promise.all([
      tx.tinkerFuture.update({ where: { id: futureId }, data: { status: 'running' } }),
      tx.tinkerTrainingClient.update({ where: { id: clientId }, data: { worker, workerSeenAt: new Date() } }),
    ]);
  }

  /** The call's outcome, and the client's applied seq_id moved past it (a failed call is applied too: nothing of it was kept). */
  async finish(
    tx: Tx,
    future: FutureRow,
    outcome: { result: TinkerResult } | { error: string; category: string },
    client: { worker?: string; lostReason?: string },
  ): Promise<void> {
    await tx.tinkerFuture.update({
      where: { id: future.id },
      data:
        'result' in outcome
          ? { status: 'succeeded', result: packJson(outcome.result) as unknown as Prisma.InputJsonValue, request: Prisma.DbNull, completedAt: new Date() }
          : { status: 'failed', error: outcome.error, errorCategory: outcome.category, request: Prisma.DbNull, completedAt: new Date() },
    });
    if (future.clientId && future.seqId !== null) {
      await tx.tinkerTrainingClient.updateMany({
        where: { id: future.clientId, appliedSeq: { lt: future.seqId } },
        data: { appliedSeq: future.seqId },
      });
      await tx.tinkerTrainingClient.update({
        where: { id: future.clientId },
        data: {
          ...(client.worker ? { worker: client.worker, workerSeenAt: new Date() } : {}),
          ...(client.lostReason ? { lostReason: client.lostReason } : {}),
        },
      });
    }
  }
}

function toClientRow(row: {
  id: string;
  sessionId: string;
  entityId: string;
  modelId: string;
  baseModel: string;
  loraConfig: unknown;
  appliedSeq: number;
  worker: string | null;
  workerSeenAt: Date | null;
  lostReason: string | null;
  session: { entity: { name: string } };
}): ClientRow {
  return {
    id: row.id,
    sessionId: row.sessionId,
    entityId: row.entityId,
    entityName: row.session.entity.name,
    modelId: row.modelId,
    baseModel: row.baseModel,
    loraConfig: row.loraConfig as TinkerLoraConfig,
    appliedSeq: row.appliedSeq,
    worker: row.worker,
    workerSeenAt: row.workerSeenAt,
    lostReason: row.lostReason,
  };
}
