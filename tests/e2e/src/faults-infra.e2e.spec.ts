import { startPostgresServer, TestNatsServer, TestPostgresServer } from '@trainyard/testing';
import { describeFault, FaultContext, isCleanFailure, runFault, startFaultStack, writeFaultSummary } from './support/faults';
import { Stack } from './support/stack';

// Faults, part 3: the message bus and the database. This file's stack has its own
// nats-server (restarted on the same port and JetStream store) and its own PostgreSQL server
// (crashed with `pg_ctl stop -m immediate`), so the machine's shared servers are never
// touched. No app is restarted: every one must reconnect by itself. See docs/reliability.md.

describe('faults: NATS and PostgreSQL killed during chat traffic and training', () => {
  let postgres: TestPostgresServer;
  let stack: Stack<TestNatsServer>;
  let ctx: FaultContext;
  const summary: Record<string, string> = {};

  beforeAll(async () => {
    postgres = await startPostgresServer();
    const started = await startFaultStack({ url: postgres.url });
    [ctx, stack] = [started, started.stack];
  }, 180_000);

  afterAll(async () => {
    writeFaultSummary(stack, summary);
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
