import { Inject, Injectable } from '@nestjs/common';
import {
  ComponentCheck,
  Empty,
  RpcSubject,
  ServiceHealthReport,
  Subjects,
  SystemCheckReport,
  WorkerAnnouncement,
  WorkerKind,
  WorkQueueName,
  WorkQueues,
} from '@trainyard/contracts';
import { MessageBus, RpcClient } from '@trainyard/messaging';
import { checkComponent } from '@trainyard/runtime';
import { HealthConfig } from './config/health.config';
import { DatabaseProbe } from './database-probe';

const SERVICES: Record<string, RpcSubject<Empty, ServiceHealthReport>> = {
  chat: Subjects.chat.healthCheck,
  'model-registry': Subjects.registry.healthCheck,
  'training-orchestrator': Subjects.training.healthCheck,
};

/**
 * Asks every component at once, each under its own deadline, so one hung part cannot
 * hide the state of the others. The gateway adds its own `api` entry.
 */
@Injectable()
export class SystemCheckService {
  constructor(
    @Inject(HealthConfig) private readonly config: HealthConfig,
    private readonly bus: MessageBus,
    private readonly rpc: RpcClient,
    private readonly database: DatabaseProbe,
  ) {}

  async run(): Promise<SystemCheckReport> {
    const timeout = this.config.CHECK_TIMEOUT_MS;
    const probes: Record<string, () => Promise<Record<string, unknown> | void>> = {
      database: () => this.database.ping(),
      nats: async () => ({ rtt_ms: await this.bus.rtt() }),
      health: async () => ({ instance: this.config.INSTANCE_ID }),
      ...Object.fromEntries(
        Object.entries(SERVICES).map(([name, subject]) => [name, () => this.askService(subject, timeout)]),
      ),
      'inference-queue': () => this.queue('inference'),
      'training-queue': () => this.queue('training'),
      'inference-workers': () => this.workers('inference', timeout),
      'training-workers': () => this.workers('training', timeout),
    };
    const entries = await Promise.all(
      Object.entries(probes).map(async ([name, probe]) => [name, await checkComponent(probe, timeout)] as const),
    );
    return summarize(Object.fromEntries(entries));
  }

  private async askService(subject: RpcSubject<Empty, ServiceHealthReport>, timeoutMs: number) {
    const report = await this.rpc.request(subject, {}, { timeoutMs });
    const failing = Object.entries(report.checks).filter(([, c]) => !c.ok);
    if (failing.length > 0) {
      throw new Error(failing.map(([name, c]) => `${name}: ${c.error}`).join('; '));
    }
    return { instance: report.instance };
  }

  private async queue(name: WorkQueueName) {
    return { pending: await this.bus.queueDepth(WorkQueues[name]) };
  }

  /** Scatter-gather: every worker replica answers; we stop listening shortly after the last one. */
  private async workers(kind: WorkerKind, timeoutMs: number) {
    const replies = await this.bus.gather(Subjects.workers.ping, {}, { jitterMs: 150, maxWaitMs: Math.max(100, timeoutMs - 200) });
    const found: WorkerAnnouncement[] = replies.filter((announcement) => announcement.kind === kind);
    const ready = found.filter((w) => w.ready);
    if (ready.length === 0) {
      throw new Error(found.length === 0 ? `no ${kind} worker is running` : `no ${kind} worker is ready`);
    }
    return {
      count: ready.length,
      backend: [...new Set(ready.map((w) => w.backend))].join(','),
      workers: found.map(({ instance, backend, gpu, adapter = null, ready }) => ({ instance, backend, gpu, adapter, ready })),
    };
  }
}

export function summarize(components: Record<string, ComponentCheck>): SystemCheckReport {
  const failing = Object.entries(components)
    .filter(([, c]) => !c.ok)
    .map(([name]) => name);
  return { status: failing.length === 0 ? 'ok' : 'failing', failing, components };
}
