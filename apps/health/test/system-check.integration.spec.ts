import { ComponentCheck, InferenceWorkItem, ServiceHealthReport, Subjects, WorkerAnnouncement, WorkQueues } from '@trainyard/contracts';
import { MessageBus, RpcClient } from '@trainyard/messaging';
import { freePort, startNatsServer, TestNatsServer, testServerUrl } from '@trainyard/testing';
import { HealthConfig } from '../src/config/health.config';
import { DatabaseProbe } from '../src/database-probe';
import { summarize, SystemCheckService } from '../src/system-check.service';

const PREFIX = 'healthtest';
const TIMEOUT_MS = 600;

/** The services' health answers, as RpcClient would return them: per subject, a report or a failure. */
class FakeRpc {
  constructor(private readonly answers: Record<string, () => Promise<ServiceHealthReport>>) {}

  request(subject: { name: string }): Promise<ServiceHealthReport> {
    const answer = this.answers[subject.name];
    return answer ? answer() : Promise.reject(new Error(`no answer for ${subject.name}`));
  }
}

const healthy = (service: string): (() => Promise<ServiceHealthReport>) => async () => ({
  service,
  instance: `${service}-1`,
  ok: true,
  checks: { database: { ok: true, latency_ms: 1, error: null } },
});

function announcement(kind: WorkerAnnouncement['kind'], instance: string, ready: boolean): WorkerAnnouncement {
  return { kind, instance, backend: 'wasm', gpu: false, ready, started_at: '2026-01-01T00:00:00Z', capacity: { slots: 4, active: 0 } };
}

describe('system check against a real nats-server and PostgreSQL', () => {
  let nats: TestNatsServer;
  let bus: MessageBus;
  const probes: DatabaseProbe[] = [];

  const config = (databaseUrl = testServerUrl()) =>
    Object.assign(new HealthConfig(), { DATABASE_URL: databaseUrl, CHECK_TIMEOUT_MS: TIMEOUT_MS, INSTANCE_ID: 'health-1', JETSTREAM_PREFIX: PREFIX });

  /**
   * A system check over `answers` and the database at `databaseUrl` (the test database unless
   * given), whose connection is opened first: on a busy machine opening one can take longer than
   * the check's timeout, and these checks are of what the services answer.
   */
  async function service(answers: Record<string, () => Promise<ServiceHealthReport>>, databaseUrl?: string): Promise<SystemCheckService> {
    const c = config(databaseUrl);
    const probe = new DatabaseProbe(c);
    probes.push(probe);
    if (databaseUrl === undefined) await connected(probe);
    return new SystemCheckService(c, bus, new FakeRpc(answers) as unknown as RpcClient, probe);
  }

  /** Pings until the probe's connection is open (each try within the check's timeout), at most five tries. */
  async function connected(probe: DatabaseProbe): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await probe.ping();
      } catch (err) {
        if (attempt === 5) throw err;
      }
    }
  }

  const allHealthy = {
    [Subjects.chat.healthCheck.name]: healthy('chat'),
    [Subjects.registry.healthCheck.name]: healthy('model-registry'),
    [Subjects.training.healthCheck.name]: healthy('training-orchestrator'),
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    bus = await MessageBus.connect({ servers: nats.url, streamPrefix: PREFIX });
    await bus.ensureWorkQueue(WorkQueues.inference);
    await bus.ensureWorkQueue(WorkQueues.training);
    // Three workers answer every ping: two inference ones (one still loading) and a training one not ready.
    for (const a of [announcement('inference', 'inf-1', true), announcement('inference', 'inf-2', false), announcement('training', 'train-1', false)]) {
      bus.respond(Subjects.workers.ping, () => a);
    }
    // Only counted, never read.
    for (let i = 0; i < 3; i++) await bus.enqueue(WorkQueues.inference, { completion_id: `c${i}` } as InferenceWorkItem);
    await bus.flush();
  });

  afterAll(async () => {
    for (const probe of probes) await probe.onModuleDestroy();
    await bus?.close();
    await nats?.stop();
  });

  it('reports every component, with what each one says about itself', async () => {
    const report = await (await service(allHealthy)).run();
    const c = report.components;
    expect(Object.keys(c).sort()).toEqual(
      ['chat', 'database', 'health', 'inference-queue', 'inference-workers', 'model-registry', 'nats', 'training-orchestrator', 'training-queue', 'training-workers'].sort(),
    );
    for (const name of ['chat', 'database', 'health', 'nats', 'model-registry', 'training-orchestrator', 'inference-queue', 'training-queue', 'inference-workers']) {
      expect([name, c[name].ok, c[name].error]).toEqual([name, true, null]);
    }
    expect(c['chat']['instance']).toBe('chat-1');
    expect(c['health']['instance']).toBe('health-1');
    expect(c['inference-queue']['pending']).toBe(3);
    expect(c['training-queue']['pending']).toBe(0);
    // Only ready workers count; every worker that answered is listed.
    expect(c['inference-workers']).toMatchObject({ count: 1, backend: 'wasm' });
    expect((c['inference-workers']['workers'] as { instance: string }[]).map((w) => w.instance).sort()).toEqual(['inf-1', 'inf-2']);
    expect(c['training-workers']).toMatchObject({ ok: false, error: 'no training worker is ready' });
    expect(report).toMatchObject({ status: 'failing', failing: ['training-workers'] });
  });

  it('names the failing checks a service reports, and times out a service that does not answer, without hiding the others', async () => {
    const check = await service({
      ...allHealthy,
      [Subjects.registry.healthCheck.name]: async () => ({
        service: 'model-registry',
        instance: 'r1',
        ok: false,
        checks: { database: { ok: false, latency_ms: 1, error: 'connection refused' }, nats: { ok: true, latency_ms: 1, error: null } },
      }),
      [Subjects.training.healthCheck.name]: () => new Promise<ServiceHealthReport>(() => undefined),
    });
    const report = await check.run();
    expect(report.components['model-registry']).toMatchObject({ ok: false, error: 'database: connection refused' });
    expect(report.components['training-orchestrator']).toMatchObject({ ok: false, error: `no answer within ${TIMEOUT_MS} ms` });
    expect(report.components['chat'].ok).toBe(true);
    expect(report.failing.sort()).toEqual(['model-registry', 'training-orchestrator', 'training-workers']);
  });

  it('reports a database that does not answer', async () => {
    const port = await freePort();
    const report = await (await service(allHealthy, `postgresql://nobody:nobody@127.0.0.1:${port}/none`)).run();
    expect(report.components['database'].ok).toBe(false);
    expect(report.failing).toContain('database');
  });
});

describe('summarize', () => {
  const ok: ComponentCheck = { ok: true, latency_ms: 1, error: null };
  const bad: ComponentCheck = { ok: false, latency_ms: 1, error: 'down' };

  it('is ok only when every component is', () => {
    expect(summarize({ a: ok, b: ok })).toEqual({ status: 'ok', failing: [], components: { a: ok, b: ok } });
    expect(summarize({ a: ok, b: bad, c: bad })).toMatchObject({ status: 'failing', failing: ['b', 'c'] });
  });
});
