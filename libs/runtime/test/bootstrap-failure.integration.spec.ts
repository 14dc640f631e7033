import { DynamicModule, Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import { startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { bootstrap } from '../src/bootstrap';
import { BaseServiceConfig } from '../src/config/base-service.config';
import { loadConfig } from '../src/config/load-config';
import { ServiceRuntimeModule } from '../src/service-runtime.module';
import { GracefulShutdown, onAbort } from '../src/shutdown/graceful-shutdown';

/** A worker holding one piece of work, which it lets go only when shutdown tells it to stop. */
@Injectable()
class HoldingWorker implements OnApplicationBootstrap {
  readonly seen: string[] = [];

  constructor(private readonly shutdown: GracefulShutdown) {}

  onApplicationBootstrap(): void {
    const release = this.shutdown.hold();
    onAbort(this.shutdown.stopping, () => {
      this.seen.push('stopping');
      setTimeout(() => {
        this.seen.push('released');
        release();
      }, 100);
    });
  }
}

@Module({})
class WorkerModule {
  static forRoot(config: BaseServiceConfig): DynamicModule {
    return { module: WorkerModule, imports: [ServiceRuntimeModule.forRoot({ name: 'failing-worker', config })], providers: [HoldingWorker] };
  }
}

// A process whose `failure` settles (a worker whose GPU device was lost) shuts down as on
// SIGTERM, letting its work go, and exits 1 for its supervisor to start it again. In this
// process, so process.exit is recorded rather than done.
describe('bootstrap with a failure', () => {
  let nats: TestNatsServer;
  const exits: (string | number | null | undefined)[] = [];
  let exit: jest.SpyInstance;
  let signalListeners: Map<NodeJS.Signals, NodeJS.SignalsListener[]>;

  beforeAll(async () => {
    nats = await startNatsServer();
    exit = jest.spyOn(process, 'exit').mockImplementation(((code?: string | number | null) => {
      exits.push(code);
    }) as never);
    signalListeners = new Map((['SIGTERM', 'SIGINT'] as const).map((signal) => [signal, process.listeners(signal) as NodeJS.SignalsListener[]]));
  });

  afterAll(async () => {
    exit.mockRestore();
    // bootstrap's own signal handlers go with the app.
    for (const [signal, before] of signalListeners) {
      for (const listener of process.listeners(signal)) if (!before.includes(listener as NodeJS.SignalsListener)) process.removeListener(signal, listener);
    }
    await nats?.stop();
  });

  it('shuts down, letting held work finish, and exits 1', async () => {
    const config = loadConfig(BaseServiceConfig, { NATS_URL: nats.url, HTTP_PORT: '0', HTTP_HOST: '127.0.0.1', SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_TIMEOUT_MS: '20000' });
    let fail!: (err: Error) => void;
    const failure = new Promise<Error>((resolve) => (fail = resolve));
    const app = await bootstrap(WorkerModule.forRoot(config), { name: 'failing-worker', config, failure });
    const worker = app.get(HoldingWorker);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(worker.seen).toEqual([]);
    expect(exits).toEqual([]);

    fail(new Error('the GPU device was lost: unknown, Device lost.'));
    await waitFor(() => exits.length > 0, { what: 'the process to exit', timeoutMs: 10_000 });
    expect(worker.seen).toEqual(['stopping', 'released']);
    expect(exits).toEqual([1]);
  }, 30_000);
});
