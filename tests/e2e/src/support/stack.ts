import { makeModel, MakeModelOptions } from '@trainyard/engine';
import { createTestDatabase, freePort, startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const ROOT = join(__dirname, '../../../..');
const STACK: { apps: { name: AppName; database: boolean }[] } = JSON.parse(
  readFileSync(join(ROOT, 'scripts/stack.json'), 'utf8'),
);

export type AppName =
  | 'gateway'
  | 'chat'
  | 'model-registry'
  | 'training-orchestrator'
  | 'health'
  | 'inference-worker'
  | 'training-worker';

/**
 * The whole system for one test file: its own nats-server, its own database, every app
 * built under dist/ running as a real process on free ports. Logs go to tmp/e2e-logs.
 */
export class Stack {
  readonly baseUrl: string;
  private readonly processes = new Map<AppName, ChildProcess>();

  private constructor(
    readonly nats: TestNatsServer,
    readonly databaseUrl: string,
    private readonly dropDatabase: () => Promise<void>,
    readonly modelsDir: string,
    readonly artifactsDir: string,
    private readonly ports: Map<AppName, number>,
    private readonly env: Record<string, string>,
    readonly logDir: string,
  ) {
    this.baseUrl = `http://127.0.0.1:${ports.get('gateway')}`;
  }

  static async start(options: { env?: Record<string, string> } = {}): Promise<Stack> {
    for (const app of STACK.apps) {
      if (!existsSync(join(ROOT, 'dist/apps', app.name, 'main.js'))) {
        throw new Error(`dist/apps/${app.name}/main.js is missing: build first (npm test does, or npx nx run-many -t build)`);
      }
    }
    const nats = await startNatsServer();
    const db = await createTestDatabase();
    const modelsDir = mkdtempSync(join(tmpdir(), 'trainyard-models-'));
    const artifactsDir = mkdtempSync(join(tmpdir(), 'trainyard-artifacts-'));
    const ports = new Map<AppName, number>();
    for (const app of STACK.apps) ports.set(app.name, await freePort());
    const id = Math.random().toString(36).slice(2, 8);
    const logDir = join(ROOT, 'tmp/e2e-logs', id);
    mkdirSync(logDir, { recursive: true });
    const env = {
      NATS_URL: nats.url,
      JETSTREAM_PREFIX: `e2e_${id}`,
      MODELS_DIR: modelsDir,
      ARTIFACT_ROOT: artifactsDir,
      // Off unless a test asks for it, so that a stack lists exactly the base models it adds.
      EMBEDDED_BASE_MODEL: '',
      LOG_LEVEL: 'warn',
      COMPUTE_BACKEND: 'wasm',
      RPC_TIMEOUT_MS: '5000',
      ...options.env,
    };
    const stack = new Stack(nats, db.url, db.drop, modelsDir, artifactsDir, ports, env, logDir);
    await Promise.all(STACK.apps.map((app) => stack.startApp(app.name)));
    return stack;
  }

  async startApp(name: AppName): Promise<void> {
    const app = STACK.apps.find((a) => a.name === name);
    if (!app) throw new Error(`unknown app ${name}`);
    const port = this.ports.get(name) as number;
    const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', ...this.env, HTTP_PORT: String(port) };
    if (app.database) env['DATABASE_URL'] = this.databaseUrl;
    const child = spawn(process.execPath, [join(ROOT, 'dist/apps', name, 'main.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(join(this.logDir, `${name}.log`), { flags: 'a' });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    this.processes.set(name, child);
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}; see ${this.logDir}/${name}.log`);
        return (await fetch(`http://127.0.0.1:${port}/health/ready`)).ok;
      },
      { what: `${name} to be ready`, timeoutMs: 30_000, intervalMs: 200 },
    );
  }

  /** SIGTERM, as Kubernetes would, and wait for the process to go. */
  async stopApp(name: AppName): Promise<number | null> {
    const child = this.processes.get(name);
    if (!child) return null;
    this.processes.delete(name);
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return exited;
  }

  /** SIGKILL: the process dies mid-work, as in a crash or an OOM kill. */
  async killApp(name: AppName): Promise<void> {
    const child = this.processes.get(name);
    if (!child) return;
    this.processes.delete(name);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.processes.keys()].map((name) => this.stopApp(name)));
    await this.dropDatabase();
    await this.nats.stop();
    rmSync(this.modelsDir, { recursive: true, force: true });
    rmSync(this.artifactsDir, { recursive: true, force: true });
  }

  /** Runs the key command as an operator would. */
  async keys(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
    try {
      const { stdout, stderr } = await promisify(execFile)(
        process.execPath,
        [join(ROOT, 'dist/apps/gateway/keys.js'), ...args],
        { env: { PATH: process.env['PATH'] ?? '', DATABASE_URL: this.databaseUrl } },
      );
      return { stdout, stderr, code: 0 };
    } catch (err) {
      const e = err as { stdout: string; stderr: string; code: number };
      return { stdout: e.stdout, stderr: e.stderr, code: e.code };
    }
  }

  async createKey(entity: string): Promise<{ key: string; id: string }> {
    const { stdout, stderr, code } = await this.keys('create', '--entity', entity, '--name', 'e2e', '--json');
    if (code !== 0) throw new Error(`keys create failed: ${stderr}`);
    return JSON.parse(stdout);
  }

  /** Puts a model directory where the registry looks for base models. */
  addBaseModel(id: string, config: Record<string, unknown> = { model_type: 'llama' }): void {
    const dir = join(this.modelsDir, id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  }

  /** Makes the engine's tiny model (real tokenizer, random weights) a base model of this stack. */
  addTinyModel(id = 'trainyard/tiny-chat', seed = 1, overrides: MakeModelOptions['overrides'] = {}): string {
    makeModel({ preset: 'tiny', out: join(this.modelsDir, id), seed, overrides });
    return id;
  }

  /** A connection to the stack's database, for what tests must arrange or check behind the API. */
  async withDatabase<T>(fn: (db: Client) => Promise<T>): Promise<T> {
    const db = new Client({ connectionString: this.databaseUrl });
    await db.connect();
    try {
      return await fn(db);
    } finally {
      await db.end();
    }
  }

  async entityId(name: string): Promise<string> {
    return this.withDatabase(async (db) => (await db.query('SELECT id FROM entities WHERE name = $1', [name])).rows[0]?.id);
  }

  fetch(path: string, init: RequestInit & { key?: string } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    return fetch(`${this.baseUrl}${path}`, { ...init, headers });
  }

  /** A JSON request as a client makes it; the reply's status, parsed body and headers. */
  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    { key, body, headers = {} }: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<JsonReply<T>> {
    const res = await this.fetch(path, {
      method,
      key,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T, headers: res.headers };
  }

  /** Like call(), for requests that must succeed: the body, or an error naming the status. */
  async json<T>(method: string, path: string, key: string, body?: unknown): Promise<T> {
    const reply = await this.call<T>(method, path, { key, body });
    if (reply.status >= 400) throw new Error(`${method} ${path}: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body;
  }
}

export interface JsonReply<T> {
  status: number;
  body: T;
  headers: Headers;
}
