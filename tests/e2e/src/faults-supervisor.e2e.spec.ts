import { SystemCheckReport, TrainingJobRecord } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ALL_APPS,
  ChatOutcome,
  ChatTraffic,
  chatRequest,
  createModel,
  expectCheckpointsIntact,
  expectJobEndedOnce,
  expectSettled,
  FaultContext,
  isCleanFailure,
  isSuccess,
  pidsExcept,
  sleep,
  startFaultStack,
  startSftJob,
  TrainableModel,
  waitForChat,
  waitForSteps,
} from './support/faults';
import { AppName, Stack, Supervisor } from './support/stack';

// Faults under the supervisor `npm start` runs (scripts/run-all.mjs): each app is SIGKILLed in
// turn while chat traffic flows and SFT jobs train; the supervisor alone brings it back. Then
// a crash loop, which it gives up on while the rest keeps serving, and Ctrl-C, which stops
// everything. See docs/reliability.md, "What happens when a process dies".

/** The system-check component that reports each app (the gateway is the one answering it). */
const COMPONENT: Record<Exclude<AppName, 'gateway'>, string> = {
  chat: 'chat',
  'model-registry': 'model-registry',
  'training-orchestrator': 'training-orchestrator',
  health: 'health',
  'inference-worker': 'inference-workers',
  'training-worker': 'training-workers',
};

const KILLED_IN_TURN: AppName[] = ['inference-worker', 'chat', 'model-registry', 'training-orchestrator', 'health', 'training-worker', 'gateway'];

/** Crash loop: this many quick exits in a row are restarted, the next one is given up on. */
const RESTART_LIMIT = 3;

describe('faults under the supervisor of npm start', () => {
  let ctx: FaultContext;
  let stack: Stack;
  let supervisor: Supervisor;
  let model: TrainableModel;
  let traffic: ChatTraffic;
  const jobs: string[] = [];
  /** While the gateway itself was down: its clients cannot be answered at all. */
  const gatewayDown = { from: 0, to: 0 };
  const figures: Record<string, { ready_ms: number; system_check_ok_ms: number; during_restart: string }> = {};

  beforeAll(async () => {
    // LOG_LEVEL log: every claim, skip and restart of a job is in supervisor.log, to read after a failure.
    ctx = await startFaultStack(undefined, { env: { RESTART_LIMIT: String(RESTART_LIMIT), LOG_LEVEL: 'log' } });
    stack = ctx.stack;
    supervisor = stack.supervision as Supervisor;
    model = await createModel(stack, ctx.key, 'supervised');
    traffic = new ChatTraffic(stack, ctx.key, { model: model.name, maxTokens: 16 });
  }, 180_000);

  afterAll(async () => {
    await traffic?.stop();
    if (stack) writeFileSync(join(stack.logDir, 'supervisor-figures.json'), JSON.stringify(figures, null, 2));
    await stack?.stop();
  }, 90_000);

  /** A job of the model is training (started now if the last one ended), past its first step. */
  async function training(): Promise<void> {
    const last = jobs.at(-1);
    const status = last && (await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${last}`, ctx.key)).status;
    if (!last || !['queued', 'running'].includes(status as string)) {
      jobs.push(await startSftJob(stack, ctx.key, model, ctx.fileId));
      await waitForSteps(stack, ctx.key, jobs.at(-1) as string, 1);
    }
  }

  const systemCheck = () => stack.call<SystemCheckReport>('GET', '/v1/system-check');

  for (const app of KILLED_IN_TURN) {
    it(`${app}: SIGKILLed, started again by the supervisor within seconds, nothing else restarted`, async () => {
      await training();
      const since = Date.now();
      await waitFor(() => traffic.since(since).some(isSuccess), { what: 'chat traffic to flow', timeoutMs: 60_000 });
      const others = pidsExcept(stack, ALL_APPS, app);
      const supervisorPid = supervisor.ownPid;
      const before = stack.pid(app);

      const killedAt = Date.now();
      if (app === 'gateway') gatewayDown.from = killedAt;
      await stack.killApp(app);
      let duringRestart = 'not asked';
      if (app !== 'gateway') {
        // The supervisor waits before starting it again: meanwhile system-check names it, and
        // chat requests are answered or refused cleanly, never left hanging.
        // Both at once, so that both land before the restart (a queued probe may wait for it).
        const probing = chatRequest(stack, ctx.key, { model: model.name, maxTokens: 4 }).done;
        const check = await systemCheck();
        const probe = await probing;
        duringRestart = `system-check ${check.status} failing [${check.body.failing.join(', ')}]; chat ${probe.status}${probe.retryAfter ? ` Retry-After ${probe.retryAfter}` : ''}`;
        expect(check.status).toBe(503);
        expect(check.body.failing).toContain(COMPONENT[app]);
        expectSettled([probe]);
        if (app === 'chat') expect(isCleanFailure(probe)).toBe(true);
      }

      await stack.startApp(app);
      const readyAt = Date.now();
      if (app === 'gateway') gatewayDown.to = readyAt;
      expect(stack.pid(app)).toEqual(expect.any(Number));
      expect(stack.pid(app)).not.toBe(before);
      await waitFor(async () => (await systemCheck()).status === 200, { what: 'system-check to be ok again', timeoutMs: 60_000, intervalMs: 200 });
      figures[app] = { ready_ms: readyAt - killedAt, system_check_ok_ms: Date.now() - killedAt, during_restart: duringRestart };
      await waitForChat(stack, ctx.key, model.name, `chat to answer after ${app} came back`);

      expect(pidsExcept(stack, ALL_APPS, app)).toEqual(others);
      expect(supervisor.ownPid).toBe(supervisorPid);
      expect(supervisor.log()).toContain(`${app} exited (SIGKILL)`);
    }, 120_000);
  }

  it('every chat request ended cleanly, and every job ended once with its checkpoint', async () => {
    const outcomes = await traffic.stop();
    const duringGatewayOutage = (o: ChatOutcome) => o.startedAt <= gatewayDown.to && (o.endedAt ?? Infinity) >= gatewayDown.from;
    // The gateway is the one part whose own restart clients see as refused connections.
    expectSettled(outcomes.filter((o) => !duringGatewayOutage(o)));
    for (const o of outcomes.filter(duringGatewayOutage)) {
      if (!isSuccess(o) && !isCleanFailure(o)) expect(o.broken).toMatch(/fetch failed|ECONNREFUSED|ECONNRESET|socket/i);
    }
    expect(outcomes.filter((o) => o.startedAt > gatewayDown.to).some(isSuccess)).toBe(true);

    const ended: TrainingJobRecord[] = [];
    for (const id of jobs) ended.push(await expectJobEndedOnce(stack, ctx.key, id));
    expect(ended.every((job) => job.status === 'succeeded')).toBe(true);
    await expectCheckpointsIntact(stack, ctx.key, model, ended);
  }, 360_000);

  it('gives up loudly on a crash loop, and the rest keeps serving', async () => {
    const givenUp = () => supervisor.log().includes('GIVING UP on health');
    // Killed again each time it is started, until the supervisor stops trying.
    for (let kills = 0; !givenUp(); kills++) {
      expect(kills).toBeLessThanOrEqual(RESTART_LIMIT + 1);
      await supervisor.until(() => supervisor.pid('health') !== undefined || givenUp(), 'health to be started again, or given up on');
      if (!givenUp()) await stack.killApp('health');
    }
    expect(supervisor.log()).toMatch(/health exited \(SIGKILL\) \d+ times in a row.*a crash loop/);
    // Given up on: it stays down, and system-check says so while everything else answers.
    await sleep(2_000);
    expect(supervisor.pid('health')).toBeUndefined();
    const check = await systemCheck();
    expect(check.status).toBe(503);
    expect(check.body.failing).toContain('health');
    await waitForChat(stack, ctx.key, model.name, 'chat to answer with health given up on');
    expect(supervisor.ownPid).toEqual(expect.any(Number));
  }, 120_000);

  it('stops every app gracefully on Ctrl-C, and only then', async () => {
    const running = ALL_APPS.filter((app) => stack.pid(app) !== undefined);
    const pids = running.map((app) => stack.pid(app) as number);
    expect(await supervisor.stop()).toBe(0);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    // Each app got one signal and finished its own shutdown (a second signal would have cut it short, exit 1).
    for (const app of running) expect(supervisor.log()).toContain(`${app} stopped (code 0)`);
  }, 60_000);
});
