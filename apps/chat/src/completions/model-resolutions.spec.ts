import { ErrorCode, ModelsChanged, ResolveModelReply, ResolveModelRequest, ServiceError, Subjects } from '@trainyard/contracts';
import { encodeMessage, RequestConnection, RpcClient } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { ModelResolutions } from './model-resolutions';

/** What the connection's subscription callback and status feed see, as nats.js gives them. */
type Msg = { data: Uint8Array };
type Status = { type: 'disconnect' | 'reconnect'; data: string };
/** The raw connection RequestConnection is given by the service's NATS server. */
type Connection = Parameters<RequestConnection['attach']>[0];

function trained(modelId: string, step: number): ResolveModelReply {
  return { base_model: 'base', base_model_dir: '/models/base', base_model_bundle: null, model_id: modelId, step, adapter_bundle: `/a/${modelId}/${step}`, adapter_sha256: 'f'.repeat(64) };
}

/**
 * The connection the requests and the announcements arrive on: its subscription callback, its
 * status events and its flushes are the test's to drive. `autoFlush` off: each flush waits to
 * be answered.
 */
class FakeConnection {
  callback?: (err: Error | null, msg: Msg) => void;
  subscribed?: string;
  queue?: string;
  autoFlush = true;
  readonly flushes: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private readonly statuses: Status[] = [];
  private wake?: () => void;

  isClosed(): boolean {
    return false;
  }

  subscribe(subject: string, options: { queue?: string; callback: (err: Error | null, msg: Msg) => void }) {
    this.subscribed = subject;
    this.queue = options.queue;
    this.callback = options.callback;
    return { unsubscribe: () => undefined, isClosed: () => false };
  }

  flush(): Promise<void> {
    if (this.autoFlush) return Promise.resolve();
    return new Promise((resolve, reject) => this.flushes.push({ resolve, reject }));
  }

  answerFlushes(): void {
    for (const f of this.flushes.splice(0)) f.resolve();
  }

  status(): AsyncIterable<Status> {
    const feed = this.statuses;
    const wait = () => new Promise<void>((resolve) => (this.wake = resolve));
    return {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (feed.length) yield feed.shift() as Status;
          await wait();
        }
      },
    };
  }

  report(type: Status['type']): void {
    this.statuses.push({ type, data: 'nats://127.0.0.1:4222' });
    this.wake?.();
  }

  announce(change: ModelsChanged | string): void {
    const data = typeof change === 'string' ? new TextEncoder().encode(change) : encodeMessage(change);
    this.callback?.(null, { data } as Msg);
  }
}

/** The registry behind the rpc client: names it knows, and how often it was asked. */
class FakeRegistry {
  readonly names = new Map<string, ResolveModelReply>();
  asked = 0;
  /** When set, answers wait for it. */
  gate?: Promise<void>;

  readonly client = {
    request: async (subject: { name: string }, request: ResolveModelRequest) => {
      expect(subject.name).toBe(Subjects.registry.resolveModel.name);
      this.asked++;
      const reply = this.names.get(`${request.entity_name}:${request.model}`);
      await this.gate;
      if (!reply) throw new ServiceError(ErrorCode.ModelNotFound, `The model \`${request.model}\` does not exist`);
      return reply;
    },
  } as unknown as RpcClient;
}

const acme = (model: string): ResolveModelRequest => ({ entity_id: 'e-acme', entity_name: 'acme', model });
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ModelResolutions', () => {
  let nc: FakeConnection;
  let registry: FakeRegistry;
  let resolutions: ModelResolutions;

  /** `connected` false: the NATS server of the service has not connected yet. */
  function start(config: Partial<ChatConfig> = {}, connected = true): RequestConnection {
    const requests = new RequestConnection();
    if (connected) requests.attach(nc as unknown as Connection);
    resolutions = new ModelResolutions(Object.assign(new ChatConfig(), config), requests, registry.client);
    resolutions.onApplicationBootstrap();
    return requests;
  }

  beforeEach(() => {
    nc = new FakeConnection();
    registry = new FakeRegistry();
    registry.names.set('acme:acme/p/x', trained('m1', 3));
    registry.names.set('acme:acme/p/x:step2', trained('m1', 2));
    registry.names.set('acme:acme/p/y', trained('m2', 1));
  });

  afterEach(() => resolutions?.onModuleDestroy());

  it('subscribes to the announcements without a queue group, and serves a name again from the cache', async () => {
    start();
    await settle();
    expect(nc.subscribed).toBe(Subjects.registry.modelsChanged.name);
    expect(nc.queue).toBeUndefined();
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 3));
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 3));
    expect(registry.asked).toBe(1);
  });

  it('drops every name of a model when its change is announced, and asks the registry again', async () => {
    start();
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x:step2'));
    await resolutions.resolve(acme('acme/p/y'));
    expect(registry.asked).toBe(3);

    registry.names.set('acme:acme/p/x', trained('m1', 4)); // a new checkpoint...
    registry.names.delete('acme:acme/p/x:step2'); // ...and an old one deleted
    nc.announce({ entity_id: 'e-acme', model_id: 'm1' });

    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 4));
    await expect(resolutions.resolve(acme('acme/p/x:step2'))).rejects.toMatchObject({ code: ErrorCode.ModelNotFound });
    expect(await resolutions.resolve(acme('acme/p/y'))).toEqual(trained('m2', 1)); // another model: still cached
    expect(registry.asked).toBe(5);
  });

  it('never caches "not found": a model created later resolves at once', async () => {
    start();
    await settle();
    await expect(resolutions.resolve(acme('acme/p/new'))).rejects.toMatchObject({ code: ErrorCode.ModelNotFound });
    registry.names.set('acme:acme/p/new', trained('m3', 0));
    expect(await resolutions.resolve(acme('acme/p/new'))).toEqual(trained('m3', 0));
  });

  it('keeps callers apart: another entity naming a cached model is asked about, not served', async () => {
    start();
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    const globex = { entity_id: 'e-globex', entity_name: 'globex', model: 'acme/p/x' };
    await expect(resolutions.resolve(globex)).rejects.toMatchObject({ code: ErrorCode.ModelNotFound });
  });

  it('serves a hit without a round trip to the NATS server, and never once the announcement of its change was read', async () => {
    start();
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    nc.autoFlush = false;
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 3));
    expect(nc.flushes).toHaveLength(0);
    expect(registry.asked).toBe(1);
    // Read on the connection the requests come in on: the eviction is done when the callback returns.
    registry.names.set('acme:acme/p/x', trained('m1', 4));
    nc.announce({ entity_id: 'e-acme', model_id: 'm1' });
    const next = resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(2); // asked at once, before anything else could run
    expect(await next).toEqual(trained('m1', 4));
  });

  it('subscribes once the NATS server of the service is connected, and asks the registry until then', async () => {
    const requests = start({}, false);
    await settle();
    expect(nc.subscribed).toBeUndefined();
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(2);
    requests.attach(nc as unknown as Connection);
    await settle();
    expect(nc.subscribed).toBe(Subjects.registry.modelsChanged.name);
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(3);
  });

  it('does not store an answer if an announcement arrived while it was being asked for', async () => {
    start();
    await settle();
    let open: () => void = () => undefined;
    registry.gate = new Promise((resolve) => (open = resolve));
    const inFlight = resolutions.resolve(acme('acme/p/x'));
    await settle();
    nc.announce({ entity_id: 'e-acme', model_id: 'm1' }); // the registry may have answered before this change
    open();
    expect(await inFlight).toEqual(trained('m1', 3));
    registry.gate = undefined;
    registry.names.set('acme:acme/p/x', trained('m1', 4));
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 4));
  });

  it('is bypassed until the NATS server has confirmed its subscription', async () => {
    nc.autoFlush = false;
    start();
    await settle();
    nc.flushes.splice(0); // the confirming flush is not answered yet
    nc.autoFlush = true;
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(2);
  });

  it('empties and bypasses itself while disconnected, and until its subscription is confirmed after the reconnect', async () => {
    start();
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(1);

    nc.report('disconnect');
    await settle();
    // Announcements published now are lost: the model changes and this replica cannot know.
    registry.names.set('acme:acme/p/x', trained('m1', 4));
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 4));
    expect(await resolutions.resolve(acme('acme/p/x'))).toEqual(trained('m1', 4));
    expect(registry.asked).toBe(3);

    nc.autoFlush = false;
    nc.report('reconnect');
    await settle();
    expect(nc.flushes).toHaveLength(1); // confirming the resubscription
    await resolutionThroughRegistry(acme('acme/p/x'));
    expect(registry.asked).toBe(4);
    nc.answerFlushes();
    nc.autoFlush = true;
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(5);
  });

  it('drops everything on an announcement it cannot read', async () => {
    start();
    await settle();
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/y'));
    nc.announce('not json');
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/y'));
    expect(registry.asked).toBe(4);
  });

  it('is off with MODEL_RESOLUTION_CACHE_TTL_MS=0: every completion asks the registry', async () => {
    start({ MODEL_RESOLUTION_CACHE_TTL_MS: 0 });
    await settle();
    expect(nc.subscribed).toBeUndefined();
    await resolutions.resolve(acme('acme/p/x'));
    await resolutions.resolve(acme('acme/p/x'));
    expect(registry.asked).toBe(2);
  });

  /** Resolves while the test holds flushes back: must not wait for one. */
  async function resolutionThroughRegistry(request: ResolveModelRequest): Promise<void> {
    const pending = nc.flushes.length;
    await resolutions.resolve(request);
    expect(nc.flushes).toHaveLength(pending);
  }
});
