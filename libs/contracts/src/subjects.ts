import type { ServiceHealthReport, SystemCheckReport, WorkerAnnouncement } from './health/health.messages';
import type { ListBaseModelsReply } from './registry/base-models.messages';

/**
 * A request/reply subject together with the types of its request and reply, so both sides
 * of a message import one declaration and cannot drift apart.
 */
export interface RpcSubject<Req, Res> {
  readonly name: string;
  /** Phantom fields: carry the types only, never set. */
  readonly request?: Req;
  readonly reply?: Res;
}

function rpc<Req, Res>(name: string): RpcSubject<Req, Res> {
  return { name };
}

export type Empty = Record<string, never>;

/**
 * Every subject in the system, owner first and versioned. Services subscribe in a queue
 * group named after the service, so replicas share the load.
 */
export const Subjects = {
  chat: {
    healthCheck: rpc<Empty, ServiceHealthReport>('chat.health.check.v1'),
  },
  registry: {
    healthCheck: rpc<Empty, ServiceHealthReport>('registry.health.check.v1'),
    listBaseModels: rpc<Empty, ListBaseModelsReply>('registry.base-models.list.v1'),
  },
  training: {
    healthCheck: rpc<Empty, ServiceHealthReport>('training.health.check.v1'),
  },
  health: {
    healthCheck: rpc<Empty, ServiceHealthReport>('health.health.check.v1'),
    systemCheck: rpc<Empty, SystemCheckReport>('health.system.check.v1'),
  },
  workers: {
    /** Scatter-gather, no queue group: every worker answers with its announcement. */
    ping: rpc<Empty, WorkerAnnouncement>('workers.ping.v1'),
  },
} as const;

/** The NATS queue group of each service; one name per bounded context. */
export const QueueGroups = {
  chat: 'chat',
  registry: 'model-registry',
  training: 'training-orchestrator',
  health: 'health',
} as const;
