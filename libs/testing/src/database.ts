import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { repoRoot } from './root';

/** The template test databases are cloned from; a tree with its own migrations names its own. */
const TEMPLATE = process.env['TEST_DATABASE_TEMPLATE'] ?? 'trainyard_test_template';

/** Server the tests may create databases on; `npm test` sets it, a local default otherwise. */
export function testServerUrl(): string {
  return process.env['TEST_DATABASE_URL'] ?? 'postgresql://trainyard:trainyard@127.0.0.1:5432/postgres';
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (db: Client) => Promise<T>): Promise<T> {
  const db = new Client({ connectionString: testServerUrl() });
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end();
  }
}

/**
 * A fresh, migrated database for one test file, cloned from a template that holds the
 * committed migrations (made on first use; `npm test` remakes it every run).
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  await ensureTemplate();
  const name = `trainyard_t_${randomBytes(6).toString('hex')}`;
  await admin((db) => db.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE}`));
  return {
    url: withDatabase(testServerUrl(), name),
    drop: () => admin((db) => db.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Test files run in parallel workers: one makes the template while the others wait. */
const TEMPLATE_LOCK = 7_316_001;

async function ensureTemplate(): Promise<void> {
  await admin(async (db) => {
    await db.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      const exists = (await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [TEMPLATE])).rowCount;
      if (exists) return;
      const url = withDatabase(testServerUrl(), TEMPLATE);
      execFileSync(process.execPath, [join(repoRoot(), 'scripts/db.mjs'), 'create-db', url], { stdio: 'inherit' });
      execFileSync(process.execPath, [join(repoRoot(), 'scripts/db.mjs'), 'migrate', url], { stdio: 'ignore' });
    } finally {
      await db.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
}
