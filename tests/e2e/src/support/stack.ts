import { ArtifactStore, DiskArtifactStore, S3ArtifactStore } from '@trainyard/artifacts';
import { makeModel, MakeModelOptions } from '@trainyard/engine';
import { createTestDatabase, freePort, repoRoot, startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

export const ROOT = repoRoot();
const STACK: { apps: { name: AppName; database: boolean; port: number }[] } = JSON.parse(
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
 * `supervised`: the apps run under scripts/run-all.mjs, the supervisor `npm start` runs, which
 * starts them again when they die (see Supervisor); otherwise each is a child of the test.
 */
/** What a stack runs on: one nats-server (the default) or a cluster of them. */
export interface NatsUnderTest {
  url: string;
  stop(): Promise<void>;
}

export class Stack<Nats extends NatsUnderTest = NatsUnderTest> {
  private readonly processes = new Map<AppName, ChildProcess>();
  private readonly replicas: ChildProcess[] = [];
  private supervisor?: Supervisor;

  private constructor(
    readonly nats: Nats,
    readonly databaseUrl: string,
    private readonly dropDatabase: () => Promise<void>,
    readonly modelsDir: string,
    readonly artifactsDir: string,
    private readonly ports: Map<AppName, number>,
    private readonly env: Record<string, string>,
    readonly logDir: string,
    private readonly appEnv: Partial<Record<AppName, Record<string, string>>> = {},
  ) {
  }

  /**
   * `database`: a migrated database to use instead of a fresh one on the shared server (a
   * test that crashes PostgreSQL brings its own private server); it is not dropped at stop.
   * `nats`: starts what the stack runs on instead of one private nats-server (a cluster).
   * `appEnv`: settings of one app only, over `env` (not under the supervisor).
   */
  static async start<Nats extends NatsUnderTest = TestNatsServer>(
    options: {
      env?: Record<string, string>;
      appEnv?: Partial<Record<AppName, Record<string, string>>>;
      database?: { url: string };
      supervised?: { env?: Record<string, string> };
      nats?: () => Promise<Nats>;
    } = {},
  ): Promise<Stack<Nats>> {
    for (const app of STACK.apps) {
      if (!existsSync(join(ROOT, 'dist/apps', app.name, 'main.js'))) {
        throw new Error(`dist/apps/${app.name}/main.js is missing: build first (npm test does, or npx nx run-many -t build)`);
      }
    }
    const nats = options.nats ? await options.nats() : ((await startNatsServer()) as unknown as Nats);
    const db = options.database ? { url: options.database.url, drop: async () => undefined } : await createTestDatabase();
    const modelsDir = mkdtempSync(join(tmpdir(), 'trainyard-models-'));
    const artifactsDir = mkdtempSync(join(tmpdir(), 'trainyard-artifacts-'));
    const ports = new Map<AppName, number>();
    const offset = options.supervised ? await freePortOffset() : 0;
    for (const app of STACK.apps) ports.set(app.name, options.supervised ? app.port + offset : await freePort());
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
    const stack = new Stack(nats, db.url, db.drop, modelsDir, artifactsDir, ports, env, logDir, options.appEnv);
    try {
      if (options.supervised) {
        stack.supervisor = Supervisor.start({ ...env, ...options.supervised.env, PATH: process.env['PATH'] ?? '', DATABASE_URL: db.url, PORT_OFFSET: String(offset), INFERENCE_WORKERS: '1' }, logDir);
        await Promise.all(STACK.apps.map((app) => stack.waitReady(app.name)));
      } else {
        await Promise.all(STACK.apps.map((app) => stack.startApp(app.name)));
      }
    } catch (err) {
      // The caller gets no stack to stop: stop what did start, or it outlives the test run.
      await stack.stop().catch(() => undefined);
      throw err;
    }
    return stack;
  }

  /** The gateway's address (its port may change when another process took the first one). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.ports.get('gateway')}`;
  }

  /** The artifact store the stack's apps use: on disk under artifactsDir, or the S3 server its env names. */
  artifacts(): ArtifactStore {
    const env = this.env;
    if (env['ARTIFACT_STORE'] !== 's3') return new DiskArtifactStore(this.artifactsDir);
    return new S3ArtifactStore({
      endpoint: env['S3_ENDPOINT'],
      bucket: env['S3_BUCKET'],
      region: env['S3_REGION'] ?? 'us-east-1',
      prefix: env['S3_PREFIX'],
      accessKeyId: env['S3_ACCESS_KEY_ID'],
      secretAccessKey: env['S3_SECRET_ACCESS_KEY'],
      forcePathStyle: env['S3_FORCE_PATH_STYLE'] === 'true',
    });
  }

  /** The prefix of this stack's JetStream streams and consumers. */
  get jetstreamPrefix(): string {
    return this.env['JETSTREAM_PREFIX'];
  }

  /** Starts the app; under the supervisor, waits for the supervisor to have started it again and for it to be ready. */
  async startApp(name: AppName): Promise<void> {
    if (this.supervisor) {
      await this.waitReady(name);
      return;
    }
    // A port found free can be taken by another stack's process before this app binds it:
    // the app then exits (EADDRINUSE) and is started again on another port.
    for (let attempt = 1; ; attempt++) {
      try {
        this.processes.set(name, await this.launch(name, this.ports.get(name) as number, name));
        return;
      } catch (err) {
        if (attempt === 3 || !/exited with code/.test((err as Error).message)) throw err;
        this.ports.set(name, await freePort());
      }
    }
  }

  /** The stack's supervisor, when it is supervised. */
  get supervision(): Supervisor | undefined {
    return this.supervisor;
  }

  /** Under the supervisor: resolves once the app runs (a new process after a kill) and answers /health/ready. */
  async waitReady(name: AppName, timeoutMs = 60_000): Promise<void> {
    const supervisor = this.supervisor as Supervisor;
    await waitFor(
      async () => {
        if (supervisor.exited) throw new Error(`the supervisor exited; see ${this.logDir}/supervisor.log`);
        if (supervisor.pid(name) === undefined) return false;
        return (await fetch(`http://127.0.0.1:${this.ports.get(name)}/health/ready`).catch(() => undefined))?.ok ?? false;
      },
      { what: `${name} to be ready under the supervisor`, timeoutMs, intervalMs: 100 },
    );
  }

  /**
   * Another process of an app beside the first (e.g. a second inference worker, one per
   * core): same configuration, its own port and log. Stopped with the stack.
   */
  async startReplica(name: AppName): Promise<void> {
    this.replicas.push(await this.launch(name, await freePort(), `${name}-${this.replicas.length + 2}`));
  }

  private async launch(name: AppName, port: number, logName: string): Promise<ChildProcess> {
    const app = STACK.apps.find((a) => a.name === name);
    if (!app) throw new Error(`unknown app ${name}`);
    const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', ...this.env, ...this.appEnv[name], HTTP_PORT: String(port) };
    if (app.database) env['DATABASE_URL'] = this.databaseUrl;
    const child = spawn(process.execPath, [join(ROOT, 'dist/apps', name, 'main.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(join(this.logDir, `${logName}.log`), { flags: 'a' });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    // An exit ends the wait at once (waitFor would keep asking until its timeout).
    let onExit = (): void => undefined;
    const exited = new Promise<never>((_, reject) => {
      onExit = () => reject(new Error(`${logName} exited with code ${child.exitCode}; see ${this.logDir}/${logName}.log`));
      child.once('exit', onExit);
    });
    exited.catch(() => undefined);
    try {
      await Promise.race([
        exited,
        waitFor(
          async () => {
            // Only this child counts as ready: another process may answer on a port it could not bind.
            const live = (await (await fetch(`http://127.0.0.1:${port}/health/live`)).json()) as { pid?: number };
            if (live.pid !== child.pid) return false;
            return (await fetch(`http://127.0.0.1:${port}/health/ready`)).ok;
          },
          { what: `${logName} to be ready`, timeoutMs: 60_000, intervalMs: 200 },
        ),
      ]);
    } catch (err) {
      // Never leave a process that did not come up running behind the test.
      child.kill('SIGKILL');
      throw err;
    } finally {
      child.off('exit', onExit);
    }
    return child;
  }

  /** The process id of a running app: a test tells by it that an app was not restarted. */
  pid(name: AppName): number | undefined {
    if (this.supervisor) return this.supervisor.pid(name);
    const child = this.processes.get(name);
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }

  /** SIGTERM, as Kubernetes would, and wait for the process to go. */
  async stopApp(name: AppName): Promise<number | null> {
    if (this.supervisor) throw new Error('a supervised app is stopped by killApp; the supervisor starts it again');
    const child = this.processes.get(name);
    if (!child) return null;
    this.processes.delete(name);
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return exited;
  }

  /** SIGKILL: the process dies mid-work, as in a crash or an OOM kill. Under the supervisor, resolves once it has seen the exit. */
  async killApp(name: AppName): Promise<void> {
    if (this.supervisor) return this.supervisor.kill(name);
    const child = this.processes.get(name);
    if (!child) return;
    this.processes.delete(name);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** The apps of this stack whose process has ended (crashed, or was stopped) since it started. */
  exitedApps(): AppName[] {
    return [...this.processes].filter(([, child]) => child.exitCode !== null || child.signalCode !== null).map(([name]) => name);
  }

  /** Everything an app has written to stdout and stderr so far (its file under logDir). */
  readLog(name: AppName): string {
    if (this.supervisor) return this.supervisor.log(name);
    const path = join(this.logDir, `${name}.log`);
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  }

  async stop(): Promise<void> {
    await this.supervisor?.stop();
    const replicasGone = this.replicas.splice(0).map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      return exited;
    });
    await Promise.all([...replicasGone, ...[...this.processes.keys()].map((name) => this.stopApp(name))]);
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

  /** Makes the engine's tiny model (real tokenizer, random weights, stored in `dtype`) a base model of this stack. */
  addTinyModel(id = 'trainyard/tiny-chat', seed = 1, overrides: MakeModelOptions['overrides'] = {}, dtype: MakeModelOptions['dtype'] = 'F32'): string {
    makeModel({ preset: 'tiny', out: join(this.modelsDir, id), seed, overrides, dtype });
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

/**
 * scripts/run-all.mjs as `npm start` runs it, for one stack. Its output is kept (supervisor.log
 * under the stack's log directory) and read for the process ids it announces ("<app> started,
 * pid N") and the exits it sees.
 */
export class Supervisor {
  private readonly pids = new Map<string, number>();
  private output = '';
  private readonly watchers = new Set<() => void>();

  private constructor(private readonly child: ChildProcess) {}

  static start(env: Record<string, string>, logDir: string): Supervisor {
    // In a process group of its own, as in a terminal, so that stop() can press Ctrl-C.
    const child = spawn(process.execPath, [join(ROOT, 'scripts/run-all.mjs')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const supervisor = new Supervisor(child);
    const log = createWriteStream(join(logDir, 'supervisor.log'), { flags: 'a' });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.pipe(log);
      stream?.setEncoding('utf8');
      let pending = '';
      stream?.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        supervisor.read(lines);
      });
    }
    child.on('exit', () => supervisor.notify());
    return supervisor;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The process id of the supervisor itself. */
  get ownPid(): number | undefined {
    return this.exited ? undefined : this.child.pid;
  }

  /** The app's current process, while it runs. */
  pid(name: string): number | undefined {
    return this.pids.get(name);
  }

  /** Every line the supervisor printed about the app or itself (its own lines start with "supervisor"). */
  log(name?: string): string {
    return this.output
      .split('\n')
      .filter((line) => !name || line.startsWith(`${name.padEnd(21)}|`) || (line.startsWith('supervisor') && line.includes(` ${name} `)))
      .join('\n');
  }

  /** SIGKILL to the app's process; resolves once the supervisor reported the exit. */
  async kill(name: string): Promise<void> {
    const pid = this.pids.get(name);
    if (pid === undefined) throw new Error(`${name} is not running under the supervisor`);
    const exits = this.count(`| ${name} exited`);
    process.kill(pid, 'SIGKILL');
    await this.until(() => this.count(`| ${name} exited`) > exits, `the supervisor to see ${name} exit`);
  }

  /** Resolves once `test` holds over the output (checked on each new line), failing after `timeoutMs`. */
  until(test: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!test()) return;
        this.watchers.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.watchers.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      this.watchers.add(check);
      check();
    });
  }

  private count(text: string): number {
    return this.output.split(text).length - 1;
  }

  /** Ctrl-C: SIGINT to its whole process group, as a terminal sends it; resolves with its exit code once it and every app are gone. */
  async stop(): Promise<number | null> {
    if (this.exited) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    process.kill(-(this.child.pid as number), 'SIGINT');
    return exited;
  }

  private read(lines: string[]): void {
    for (const line of lines) {
      this.output += `${line}\n`;
      const started = /^supervisor +\| (\S+) started, pid (\d+)$/.exec(line);
      if (started) this.pids.set(started[1], Number(started[2]));
      // An exit (said on stderr) may be read after the next start (said on stdout): it names its pid.
      const gone = /^supervisor +\| (\S+) (exited|stopped) /.exec(line);
      const pid = /, pid (\d+)/.exec(line)?.[1];
      if (gone && (pid === undefined || this.pids.get(gone[1]) === Number(pid))) this.pids.delete(gone[1]);
    }
    this.notify();
  }

  private notify(): void {
    for (const watcher of [...this.watchers]) watcher();
  }
}

/** An offset that puts every port of scripts/stack.json on a free port (below the ephemeral range). */
async function freePortOffset(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const offset = 10_000 + 100 * Math.floor(Math.random() * 140);
    const free = await Promise.all(STACK.apps.map((app) => portFree(app.port + offset)));
    if (free.every(Boolean)) return offset;
  }
  throw new Error('no free block of ports for a supervised stack');
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
