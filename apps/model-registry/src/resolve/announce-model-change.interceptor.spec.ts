import { INestMicroservice } from '@nestjs/common';
import { CustomTransportStrategy, NatsContext, Server } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { ErrorCode, EventSubject, ServiceError, Subjects } from '@trainyard/contracts';
import { MessageBus, RpcErrorFilter } from '@trainyard/messaging';
import { lastValueFrom } from 'rxjs';
import { CheckpointRecorderController } from '../checkpoints/checkpoint-recorder.controller';
import { CheckpointRecorderService } from '../checkpoints/checkpoint-recorder.service';
import { CheckpointsController } from '../checkpoints/checkpoints.controller';
import { CheckpointsService } from '../checkpoints/checkpoints.service';
import { RegistryConfig } from '../config/registry.config';
import { ModelsController } from '../models/models.controller';
import { ModelsService } from '../models/models.service';
import { ModelChangesPublisher } from './model-changes.publisher';

/** Nest's request path (interceptors, filters) without a broker: a request is a call. */
class InMemoryTransport extends Server implements CustomTransportStrategy {
  listen(callback: () => void): void {
    callback();
  }
  close(): void {
    return undefined;
  }
  on(): void {
    return undefined;
  }
  unwrap<T>(): T {
    throw new Error('no client');
  }
  async request(subject: string, data: unknown): Promise<unknown> {
    const handler = this.getHandlerByPattern(subject);
    if (!handler) throw new Error(`nothing handles ${subject}`);
    return lastValueFrom(this.transformToObservable(await handler(data, new NatsContext([subject, undefined]))));
  }
}

const scope = { entity_id: 'e-1', entity_name: 'acme', model_id: 'm-1' };


/** How long the publisher waits for the server to answer a flush: long enough for a loaded machine to run the test's side. */
const FLUSH_TIMEOUT_MS = 2_000;
describe('the registry announces model changes before it replies', () => {
  let app: INestMicroservice;
  let transport: InMemoryTransport;
  /** What happened, in order: the handler's work, each publish and flush, each reply. */
  let log: string[];
  let flushes: { resolve: () => void; reject: (err: Error) => void }[];
  const services = {
    models: { delete: jest.fn(), create: jest.fn(), list: jest.fn(), getOwned: jest.fn() },
    checkpoints: { delete: jest.fn(), list: jest.fn() },
    recorder: { record: jest.fn() },
  };

  const bus: Pick<MessageBus, 'publish' | 'flush'> = {
    publish: <T>(subject: EventSubject<T>, payload: T) => void log.push(`publish ${subject.name} ${JSON.stringify(payload)}`),
    flush: () =>
      new Promise<void>((resolve, reject) => {
        log.push('flush sent');
        flushes.push({
          resolve: () => {
            log.push('flush answered');
            resolve();
          },
          reject,
        });
      }),
  };

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      controllers: [ModelsController, CheckpointsController, CheckpointRecorderController],
      providers: [
        { provide: ModelsService, useValue: services.models },
        { provide: CheckpointsService, useValue: services.checkpoints },
        { provide: CheckpointRecorderService, useValue: services.recorder },
        { provide: MessageBus, useValue: bus },
        { provide: RegistryConfig, useValue: Object.assign(new RegistryConfig(), { RPC_TIMEOUT_MS: FLUSH_TIMEOUT_MS }) },
        ModelChangesPublisher,
      ],
    }).compile();
    transport = new InMemoryTransport();
    app = moduleRef.createNestMicroservice({ strategy: transport });
    // As in production: a ServiceError crosses the wire as its code.
    app.useGlobalFilters(new RpcErrorFilter());
    await app.listen();
  });

  afterAll(() => app?.close());

  beforeEach(() => {
    log = [];
    flushes = [];
    const work = (reply: unknown) => async () => {
      log.push('handled');
      return reply;
    };
    services.models.delete.mockImplementation(work({ model_id: 'm-1', deleted_checkpoints: 2, deleted_run: false }));
    services.checkpoints.delete.mockImplementation(work({ deleted_count: 1, not_found_steps: [] }));
    services.recorder.record.mockImplementation(work({ id: 'job-1', step: 3 }));
    services.models.list.mockImplementation(work({ base_models: [], models: [] }));
    services.models.create.mockImplementation(work({ id: 'm-2' }));
    services.models.getOwned.mockImplementation(work({ id: 'm-1', entityName: 'acme', createdAt: new Date(0) }));
    services.checkpoints.list.mockImplementation(work({ object: 'list', data: [] }));
  });

  /** Sends the request; answers the flush only once the test has seen that the reply waits for it. */
  async function replyAfterFlush(subject: string, payload: unknown): Promise<unknown> {
    const replied = transport.request(subject, payload).then((reply) => {
      log.push('replied');
      return reply;
    });
    await waitUntil(() => flushes.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(log).not.toContain('replied');
    flushes[0].resolve();
    return replied;
  }

  const published = `publish ${Subjects.registry.modelsChanged.name} ${JSON.stringify({ entity_id: 'e-1', model_id: 'm-1' })}`;

  it.each([
    ['a model deleted', Subjects.registry.deleteModel.name, scope],
    ['checkpoints deleted', Subjects.registry.deleteCheckpoints.name, { ...scope, steps: [1] }],
    ['a checkpoint recorded', Subjects.registry.recordCheckpoint.name, { ...scope, job_id: 'job-1', adapter_bundle: 'a'.repeat(64), metrics: {} }],
  ])('%s: publishes after the work, flushes, and only then replies', async (_, subject, payload) => {
    const reply = await replyAfterFlush(subject, payload);
    expect(reply).toBeDefined();
    expect(log).toEqual(['handled', published, 'flush sent', 'flush answered', 'replied']);
  });

  it.each([
    ['listing models', Subjects.registry.listModels.name, { entity_id: 'e-1', entity_name: 'acme' }],
    ['creating a model (a new name is never cached as missing)', Subjects.registry.createModel.name, { entity_id: 'e-1', entity_name: 'acme', project: 'p', name: 'n' }],
    ['listing checkpoints', Subjects.registry.listCheckpoints.name, { ...scope, limit: 10, order: 'asc' }],
    ['getting a model', Subjects.registry.getModel.name, scope],
  ])('announces nothing when %s', async (_, subject, payload) => {
    await transport.request(subject, payload);
    expect(log).toEqual(['handled']);
  });

  it('announces a change whose handler failed (it may have failed after its commit), and keeps the handler\'s error', async () => {
    services.models.delete.mockImplementation(async () => {
      log.push('handled');
      throw new ServiceError(ErrorCode.Internal, 'could not remove the adapter files');
    });
    const outcome = transport.request(Subjects.registry.deleteModel.name, scope).catch((err: unknown) => err);
    await waitUntil(() => flushes.length === 1);
    flushes[0].resolve();
    expect(await outcome).toMatchObject({ code: ErrorCode.Internal, message: 'could not remove the adapter files' });
    expect(log).toEqual(['handled', published, 'flush sent', 'flush answered']);
  });

  it('does not acknowledge a change it could not announce: unavailable, with Retry-After', async () => {
    const outcome = transport.request(Subjects.registry.recordCheckpoint.name, { ...scope, job_id: 'job-1', adapter_bundle: 'a'.repeat(64), metrics: {} }).catch((err: unknown) => err);
    await waitUntil(() => flushes.length === 1);
    flushes[0].reject(new Error('DISCONNECT'));
    expect(await outcome).toMatchObject({ code: ErrorCode.Unavailable, details: { retryAfterSeconds: 1 } });
  });

  it('does not acknowledge a change while the NATS server does not answer the flush', async () => {
    const started = Date.now();
    const outcome = await transport.request(Subjects.registry.deleteCheckpoints.name, { ...scope, steps: [1] }).catch((err: unknown) => err);
    expect(outcome).toMatchObject({ code: ErrorCode.Unavailable, message: expect.stringContaining(`within ${FLUSH_TIMEOUT_MS} ms`) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(FLUSH_TIMEOUT_MS - 10);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!condition()) throw new Error('condition never met');
}
