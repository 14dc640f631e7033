import { describeFault, FaultContext, isCleanFailure, isSuccess, runFault, startFaultStack, writeFaultSummary } from './support/faults';
import { Stack } from './support/stack';

// Faults, part 1: the GPU workers are SIGKILLed while chat traffic flows and an SFT job
// trains on the tiny model, then started again. See docs/reliability.md, "Faults".

describe('faults: workers killed during chat traffic and training', () => {
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

  it('inference worker: its in-flight completions fail with 503/504, training goes on, service comes back', async () => {
    const report = await runFault(ctx, {
      name: 'inference-killed',
      restarts: ['inference-worker'],
      kill: () => stack.killApp('inference-worker'),
      restart: () => stack.startApp('inference-worker'),
    });
    summary['inference-worker'] = describeFault(report);
    // What the worker was generating fails, as a 503/504 (mid-stream: a last error event).
    expect(isCleanFailure(report.long.stream)).toBe(true);
    expect(isCleanFailure(report.long.plain)).toBe(true);
    expect(report.job.status).toBe('succeeded');
  }, 420_000);

  it('training worker: the job is redelivered and succeeds once, chat never notices', async () => {
    const report = await runFault(ctx, {
      name: 'training-killed',
      restarts: ['training-worker'],
      kill: () => stack.killApp('training-worker'),
      restart: () => stack.startApp('training-worker'),
    });
    summary['training-worker'] = describeFault(report);
    expect([...report.inFlight, ...report.whileDown, ...report.after].every(isSuccess)).toBe(true);
    expect(report.job.status).toBe('succeeded');
    // It succeeded by being run again from the start on the restarted worker; the record keeps its first start.
    expect(report.job.attempts).toBe(2);
    expect(Date.parse(report.job.training_start as string)).toBeLessThan(report.killedAt);
  }, 420_000);
});
