import { startPostgresServer, TestPostgresServer } from '@trainyard/testing';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BASE_MODEL, describeFault, FaultContext, isCleanFailure, runFault, SFT_LINES, uploadSftData } from './support/faults';
import { Stack } from './support/stack';

// Faults, part 3: the message bus and the database. This file's stack has its own
// nats-server (restarted on the same port and JetStream store) and its own PostgreSQL server
// (crashed with `pg_ctl stop -m immediate`), so the machine's shared servers are never
// touched. No app is restarted: every one must reconnect by itself. See docs/reliability.md.

describe('faults: NATS and PostgreSQL killed during chat traffic and training', () => {
  let postgres: TestPostgresServer;
  let stack: Stack;
  let ctx: FaultContext;
  const summary: Record<string, string> = {};

  beforeAll(async () => {
    postgres = await startPostgresServer();
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '2000' }, database: { url: postgres.url } });
    stack.addTinyModel(BASE_MODEL);
    const { key } = await stack.createKey('acme');
    ctx = { stack, key, fileId: await uploadSftData(stack, key, SFT_LINES) };
  }, 180_000);

  afterAll(async () => {
    if (stack) writeFileSync(join(stack.logDir, 'faults-summary.json'), JSON.stringify(summary, null, 2));
    await stack?.stop();
    await postgres?.stop();
  }, 60_000);

  it('NATS server: everything reconnects by itself, requests in between fail with 503/504, the job ends once', async () => {
    const report = await runFault(ctx, {
      name: 'nats-killed',
      restarts: [],
      kill: () => stack.nats.kill(),
      restart: () => stack.nats.start(),
    });
    summary['nats'] = describeFault(report);
    expect(report.whileDown.some(isCleanFailure)).toBe(true);
  }, 420_000);

  it('PostgreSQL: requests that need it fail with 503 while it is down, nothing is lost, the job ends once', async () => {
    const report = await runFault(ctx, {
      name: 'postgres-killed',
      restarts: [],
      kill: () => postgres.crash(),
      restart: () => postgres.start(),
    });
    summary['postgres'] = describeFault(report);
    expect(report.whileDown.some(isCleanFailure)).toBe(true);
    expect(report.whileDown.every((o) => o.status !== 500)).toBe(true);
  }, 420_000);
});
