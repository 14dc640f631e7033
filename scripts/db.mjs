#!/usr/bin/env node
// Database tooling that works offline. prisma/schema.prisma is the source of truth and
// prisma/migrations holds committed SQL in Prisma's own layout (so `prisma migrate deploy`
// works wherever Prisma's native schema engine can be had). Here:
//
//   node scripts/db.mjs migrate [DATABASE_URL]   apply pending migrations, recorded in
//                                                _prisma_migrations exactly as Prisma does
//   node scripts/db.mjs check                    prove the migrations build the schema
//   node scripts/db.mjs new <name>               write a migration for schema changes
//   node scripts/db.mjs create-db <DATABASE_URL> create the database if it is missing
//   node scripts/db.mjs drop-db <DATABASE_URL>   drop it (tests refresh their template)
//
// `check` and `new` use Prisma 6.19's `migrate diff`, whose WebAssembly engine runs
// offline (tools/prisma-diff); Prisma 7's schema engine is a native download.
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const schemaPath = join(root, 'prisma/schema.prisma');
const migrationsDir = join(root, 'prisma/migrations');
const diffTool = join(root, 'tools/prisma-diff');
// Prisma's own advisory lock id for migrations, so we never race a `prisma migrate deploy`.
const PRISMA_MIGRATE_LOCK = 72707369;

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

function migrations() {
  if (!existsSync(migrationsDir)) return [];
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(migrationsDir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function migrate(url, { quiet = false } = {}) {
  return withClient(url, async (db) => {
    await db.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
    try {
      await db.query(MIGRATIONS_TABLE);
      const { rows } = await db.query('SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"');
      const applied = new Map(rows.filter((r) => !r.rolled_back_at).map((r) => [r.migration_name, r]));
      let count = 0;
      for (const m of migrations()) {
        const done = applied.get(m.name);
        if (done) {
          if (!done.finished_at) throw new Error(`Migration ${m.name} started but never finished: resolve it by hand`);
          if (done.checksum !== m.checksum) throw new Error(`Migration ${m.name} was edited after it was applied (checksum differs)`);
          continue;
        }
        const id = randomUUID();
        await db.query('BEGIN');
        try {
          await db.query(
            'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
            [id, m.checksum, m.name],
          );
          await db.query(m.sql);
          await db.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
          await db.query('COMMIT');
        } catch (err) {
          await db.query('ROLLBACK');
          throw new Error(`Migration ${m.name} failed: ${err.message}`);
        }
        count++;
        if (!quiet) console.log(`applied ${m.name}`);
      }
      if (!quiet) console.log(count ? `${count} migration(s) applied` : 'database is up to date');
      return count;
    } finally {
      await db.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]);
    }
  });
}

export async function createDatabase(url) {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  await withClient(admin.toString(), async (db) => {
    const { rowCount } = await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await db.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  });
}

async function dropDatabase(url) {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  target.pathname = '/postgres';
  await withClient(target.toString(), (db) => db.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`));
}

/** Prisma 6 wants a url in the datasource and no Prisma 7 generator options: give it a copy. */
function diffableSchema(text) {
  return text
    .replace(/generator\s+\w+\s*\{[^}]*\}/g, '')
    .replace(/(datasource\s+\w+\s*\{[^}]*provider\s*=\s*"postgresql")/, '$1\n  url = env("DATABASE_URL")');
}

function ensureDiffTool() {
  if (!existsSync(join(diffTool, 'node_modules/prisma'))) {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: diffTool, stdio: 'inherit' });
  }
}

function diffSql(fromSchemaText, toSchemaText, databaseUrl) {
  ensureDiffTool();
  const dir = mkdtempSync(join(tmpdir(), 'prisma-diff-'));
  const to = join(dir, 'to.prisma');
  writeFileSync(to, diffableSchema(toSchemaText));
  const args = ['migrate', 'diff', '--to-schema-datamodel', to, '--script'];
  if (fromSchemaText === null) args.push('--from-empty');
  else {
    const from = join(dir, 'from.prisma');
    writeFileSync(from, diffableSchema(fromSchemaText));
    args.push('--from-schema-datamodel', from);
  }
  return execFileSync(join(diffTool, 'node_modules/.bin/prisma'), args, {
    cwd: diffTool,
    encoding: 'utf8',
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PRISMA_DIFF_DATABASE_URL: databaseUrl,
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
      // The CLI checks for a query engine it never uses here; any existing file satisfies it.
      PRISMA_QUERY_ENGINE_LIBRARY: process.execPath,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Everything about the public schema that a migration can change, in a comparable form. */
async function catalog(url) {
  return withClient(url, async (db) => {
    const q = async (sql) => (await db.query(sql)).rows.map((r) => JSON.stringify(r)).sort();
    return {
      columns: await q(`SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
        character_maximum_length, numeric_precision, datetime_precision
        FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`),
      indexes: await q(`SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> '_prisma_migrations'`),
      constraints: await q(`SELECT c.conrelid::regclass::text AS table_name, c.conname, pg_get_constraintdef(c.oid) AS def
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'public' AND c.conrelid::regclass::text NOT IN ('_prisma_migrations', '"_prisma_migrations"')`),
      enums: await q(`SELECT t.typname, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) AS labels
        FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid GROUP BY t.typname`),
    };
  });
}

function scratchUrl(base, label) {
  const url = new URL(base);
  url.pathname = `/trainyard_check_${label}_${process.pid}`;
  return url.toString();
}

async function check(baseUrl) {
  const fromMigrations = scratchUrl(baseUrl, 'migrations');
  const fromSchema = scratchUrl(baseUrl, 'schema');
  try {
    for (const url of [fromMigrations, fromSchema]) {
      await dropDatabase(url);
      await createDatabase(url);
    }
    await migrate(fromMigrations, { quiet: true });
    const expected = diffSql(null, readFileSync(schemaPath, 'utf8'), fromSchema);
    await withClient(fromSchema, (db) => db.query(expected));
    const [have, want] = await Promise.all([catalog(fromMigrations), catalog(fromSchema)]);
    const problems = [];
    for (const kind of Object.keys(want)) {
      const missing = want[kind].filter((x) => !have[kind].includes(x));
      const extra = have[kind].filter((x) => !want[kind].includes(x));
      missing.forEach((x) => problems.push(`${kind}: in schema.prisma, not built by migrations: ${x}`));
      extra.forEach((x) => problems.push(`${kind}: built by migrations, not in schema.prisma: ${x}`));
    }
    if (problems.length) {
      console.error(`schema.prisma and prisma/migrations disagree:\n  ${problems.join('\n  ')}`);
      console.error('Write a migration with: node scripts/db.mjs new <name>');
      process.exitCode = 1;
    } else {
      console.log(`schema.prisma and ${migrations().length} migration(s) agree`);
    }
  } finally {
    await dropDatabase(fromMigrations).catch(() => undefined);
    await dropDatabase(fromSchema).catch(() => undefined);
  }
}

/** The schema as of the last commit that touched the migrations: what they already build. */
function schemaAtLastMigration() {
  if (migrations().length === 0) return null;
  const sha = execFileSync('git', ['log', '-1', '--format=%H', '--', 'prisma/migrations'], { cwd: root, encoding: 'utf8' }).trim();
  if (!sha) throw new Error('Commit the existing migrations before writing a new one');
  return execFileSync('git', ['show', `${sha}:prisma/schema.prisma`], { cwd: root, encoding: 'utf8' });
}

function newMigration(name, databaseUrl) {
  if (!/^[a-z0-9_]+$/.test(name ?? '')) throw new Error('Name the migration in snake_case, e.g. add_file_sizes');
  const sql = diffSql(schemaAtLastMigration(), readFileSync(schemaPath, 'utf8'), databaseUrl);
  if (!sql.trim() || /^-- This is an empty migration/.test(sql.trim())) {
    console.log('No schema changes: no migration written');
    return;
  }
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const dir = join(migrationsDir, `${stamp}_${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'migration.sql'), sql);
  if (!existsSync(join(migrationsDir, 'migration_lock.toml'))) {
    writeFileSync(join(migrationsDir, 'migration_lock.toml'), 'provider = "postgresql"\n');
  }
  console.log(`wrote ${dir}/migration.sql; review it, then run: node scripts/db.mjs check`);
}

const [command, arg] = process.argv.slice(2);
const databaseUrl = (command === 'new' ? undefined : arg) ?? process.env.DATABASE_URL;
const commands = {
  migrate: () => migrate(databaseUrl),
  check: () => check(databaseUrl),
  new: async () => newMigration(arg, databaseUrl),
  'create-db': () => createDatabase(databaseUrl),
  'drop-db': () => dropDatabase(databaseUrl),
};
if (!commands[command] || !databaseUrl) {
  console.error('usage: node scripts/db.mjs migrate|check|create-db|drop-db [DATABASE_URL] | new <name>  (DATABASE_URL from the environment by default)');
  process.exit(2);
}
commands[command]().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
