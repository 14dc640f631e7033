import { describeFault, FaultContext, isCleanFailure, isSuccess, runFault, SFT_LINES, sleep, startFaultStack, waitForSteps, writeFaultSummary } from './support/faults';
import { Stack } from './support/stack';

// Faults, part 2: the chat service and the model registry are SIGKILLed while chat traffic
// flows and an SFT job trains on the tiny model, then started again. See
// docs/reliability.md, "Faults".

describe('faults: services killed during chat traffic and training', () => {
  let stack: Stack;
  let ctx: FaultContext;
  const summary: Record<string, string> = {};

  beforeAll(async () => {
    ctx = await startFaultStack();
    stack = ctx.stack;
  }, 120_000);

  afterAll(async () => {
    writeFaultSummary(stack, summary);
    await stack?.stop();
  }, 60_000);

  it('chat service: requests waiting on it fail with 503/504, those already generating finish, training goes on', async () => {
    const report = await runFault(ctx, {
      name: 'chat-killed',
      restarts: ['chat'],
      kill: () => stack.killApp('chat'),
      restart: () => stack.startApp('chat'),
    });
    summary['chat'] = describeFault(report);
    // Once queued, a completion no longer needs the chat service.
    expect(isSuccess(report.long.stream)).toBe(true);
    expect(isSuccess(report.long.plain)).toBe(true);
    expect(report.whileDown.length).toBeGreaterThan(0);
    expect(report.whileDown.filter((o) => !isSuccess(o)).every(isCleanFailure)).toBe(true);
    expect(report.whileDown.some(isCleanFailure)).toBe(true);
    expect(report.job.status).toBe('succeeded');
  }, 420_000);

  it('model registry: names chat has resolved are still served while it is down, a new one fails with 503/504, the job records its checkpoint once it is back', async () => {
    const report = await runFault(ctx, {
      name: 'registry-killed',
      restarts: ['model-registry'],
      kill: () => stack.killApp('model-registry'),
      restart: () => stack.startApp('model-registry'),
      // Down until the job has trained every step, so that recording its checkpoint meets the outage.
      whileDown: async (jobId) => {
        await waitForSteps(stack, ctx.key, jobId, SFT_LINES);
        await sleep(2_000);
      },
    });
    summary['model-registry'] = describeFault(report);
    // Nothing can change while the registry is down, so chat's cache of resolved names (see
    // docs/reliability.md) keeps serving them; a name it never resolved needs the registry.
    expect(report.whileDown.filter((o) => !isSuccess(o)).every(isCleanFailure)).toBe(true);
    expect(isCleanFailure(report.unresolvedProbe)).toBe(true);
    expect(report.job.status).toBe('succeeded');
    // Recording met the outage: the job was run again once the registry was back, and recorded once.
    expect(report.job.attempts).toBeGreaterThanOrEqual(2);
    expect(Date.parse(report.job.training_start as string)).toBeLessThan(report.killedAt);
  }, 420_000);
});
