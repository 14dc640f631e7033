import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { waitFor } from './wait';

/** A private nats-server with JetStream for one test file: nothing shared, nothing left behind. */
export interface TestNatsServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Starts it again on the same port and store, as after a crash. */
  restart(): Promise<void>;
  /** SIGKILL: the server dies at once, keeping its JetStream store for start(). */
  kill(): Promise<void>;
  /** Starts it again (after kill) on the same port and store; a no-op while it runs. */
  start(): Promise<void>;
}

export async function startNatsServer(): Promise<TestNatsServer> {
  const binary = natsServerBinary();
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'trainyard-nats-'));
  let child: ChildProcess | undefined;

  const launch = async () => {
    child = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
    await waitFor(() => portAnswers(port), { what: `nats-server on port ${port}`, timeoutMs: 10_000 });
  };
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (!child || !running()) return;
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill(signal);
    await exited;
  };
  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
    restart: async () => {
      await stop();
      await launch();
    },
    kill: () => stop('SIGKILL'),
    start: async () => {
      if (!running()) await launch();
    },
  };
}

/** The nats-server on PATH, else Debian's; `npm test` installs it. */
export function natsServerBinary(): string {
  const onPath = (process.env['PATH'] ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'nats-server'));
  const binary = [...onPath, '/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find(existsSync);
  if (!binary) throw new Error('nats-server is not installed: run the tests through `npm test`, which installs it');
  return binary;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
