import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './nats-server';
import { repoRoot } from './root';

const run = promisify(execFile);

/**
 * A private PostgreSQL server for one test file, for tests that must crash the database:
 * the machine's shared server is never touched. Its one database `trainyard` holds the
 * committed migrations.
 */
export interface TestPostgresServer {
  /** The migrated database, as the apps connect to it. */
  url: string;
  port: number;
  /** `pg_ctl stop -m immediate`: every server process quits at once, as in a crash; recovery runs at the next start. */
  crash(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  stop(): Promise<void>;
}

export async function startPostgresServer(): Promise<TestPostgresServer> {
  const bin = postgresBinDir();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'trainyard-pg-'));
  const data = join(dir, 'data');
  // initdb and pg_ctl refuse to run as root: the cluster belongs to the postgres user then.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);

  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start']);
  };
  const url = `postgresql://trainyard:trainyard@127.0.0.1:${port}/trainyard`;
  try {
    await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await start();
    const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE trainyard LOGIN CREATEDB PASSWORD 'trainyard'`);
      await admin.query('CREATE DATABASE trainyard OWNER trainyard');
    } finally {
      await admin.end();
    }
    execFileSync(process.execPath, [join(repoRoot(), 'scripts/db.mjs'), 'migrate', url], { stdio: 'ignore' });
  } catch (err) {
    // Leave nothing running or on disk behind a failed start.
    await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  let running = true;
  return {
    url,
    port,
    crash: async () => {
      if (!running) return;
      running = false;
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    start: async () => {
      if (running) return;
      await start();
      running = true;
    },
    stop: async () => {
      if (running) await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).catch(() => undefined);
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((dir) => existsSync(join(dir, 'initdb')));
  if (!found) throw new Error('PostgreSQL server binaries (initdb, pg_ctl) are not installed: run the tests through `npm test`, which installs them');
  return found;
}
