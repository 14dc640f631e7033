import { ClusterMember, startNatsCluster, TestNatsCluster, TestNatsServer, waitFor } from '@trainyard/testing';
import {
  createModel,
  expectCheckpointsIntact,
  expectJobEndedOnce,
  jobEvents,
  sleep,
  startFaultStack,
  startSftJob,
  uploadSftData,
  waitForSteps,
  writeFaultSummary,
} from './support/faults';
import { AppName, NatsUnderTest, Stack } from './support/stack';

// Faults, part 5: no job is left behind, whatever dies in whatever order around the moment a
// result is reported. Each round trains a short SFT job; when its last gradient step is
// reported (the worker is about to record the checkpoint and report the result), the
// orchestrator, the training worker and NATS are killed with SIGKILL in one of the six orders,
// at seeded offsets, and then started again. Every job must end `succeeded` (or `failed` with
// a reason) once: its events unique and in order, one checkpoint per success, none doubled.
// The seed is printed, and FAULT_SEED replays a schedule. See docs/reliability.md.

const SEED = Number(process.env['FAULT_SEED'] ?? 20261128);
const STEPS = 4;
type Part = 'training-orchestrator' | 'training-worker' | 'nats';
const PARTS: Part[] = ['training-orchestrator', 'training-worker', 'nats'];
const ORDERS = permutations(PARTS);

interface Round {
  order: Part[];
  /** ms after the last step's event before the first kill, and between kills. */
  offsets: number[];
}

/** The schedule of one seed: every order once, each with its own offsets (0 to 600 ms). */
function schedule(seed: number): Round[] {
  const random = mulberry32(seed);
  return ORDERS.map((order) => ({ order, offsets: order.map(() => Math.floor(random() * 600)) }));
}

describe.each([
  { where: 'one NATS server', cluster: false },
  { where: 'a three-server NATS cluster', cluster: true },
])('faults: a seeded schedule of kills around reported results, on $where', ({ cluster }) => {
  let stack: Stack<NatsUnderTest>;
  let key: string;
  let fileId: string;
  const summary: Record<string, string> = {};

  beforeAll(async () => {
    const messaging = cluster ? { nats: () => startNatsCluster(3), env: { JETSTREAM_REPLICAS: '3' } } : undefined;
    const started = await startFaultStack(undefined, undefined, messaging);
    [stack, key] = [started.stack, started.key];
    // A short dataset: the fault stack's own file is for long jobs.
    fileId = await uploadSftData(stack, key, STEPS);
  }, 180_000);

  afterAll(async () => {
    writeFaultSummary(stack, summary);
    await stack?.stop();
  }, 60_000);

  /** SIGKILL of a part; NATS is the one server, or on the cluster the member leading JetStream. */
  async function kill(part: Part): Promise<() => Promise<void>> {
    if (part !== 'nats') {
      await stack.killApp(part as AppName);
      return () => stack.startApp(part as AppName);
    }
    if (cluster) {
      const nats = stack.nats as TestNatsCluster;
      const name = await nats.metaLeader();
      const member = nats.members.find((m) => m.name === name) as ClusterMember;
      await member.kill();
      return async () => {
        await member.start();
        await nats.waitForJetStream();
      };
    }
    const nats = stack.nats as TestNatsServer;
    await nats.kill();
    return () => nats.start();
  }

  it(`ends every job once, whatever the order of the kills (seed ${SEED})`, async () => {
    const rounds = schedule(SEED);
    for (const [i, round] of rounds.entries()) {
      const model = await createModel(stack, key, `schedule-${cluster ? 'cluster' : 'single'}-${i}`);
      const jobId = await startSftJob(stack, key, model, fileId);
      await waitForSteps(stack, key, jobId, STEPS);
      const restarts = new Map<Part, () => Promise<void>>();
      for (const [k, part] of round.order.entries()) {
        await sleep(round.offsets[k]);
        restarts.set(part, await kill(part));
      }
      // NATS first, so that the apps find it; then the rest in the order they were killed.
      for (const part of ['nats' as const, ...round.order.filter((p) => p !== 'nats')]) await restarts.get(part)?.();
      const job = await expectJobEndedOnce(stack, key, jobId);
      await expectCheckpointsIntact(stack, key, model, job.status === 'succeeded' ? [job] : []);
      const steps = (await jobEvents(stack, key, jobId)).filter((e) => e.type === 'gradient_step').length;
      summary[`round ${i}`] = `${round.order.join(' > ')} at +${round.offsets.join('/')} ms: ${job.status}${job.error_message ? ` (${job.error_message})` : ''}, attempts ${job.attempts}, ${steps} steps`;
      if (job.status === 'failed') expect(job.error_message).toEqual(expect.any(String));
    }
    // The service is whole after the last round: a new job trains to the end.
    const model = await createModel(stack, key, `schedule-${cluster ? 'cluster' : 'single'}-after`);
    const after = await expectJobEndedOnce(stack, key, await startSftJob(stack, key, model, fileId));
    expect(after.status).toBe('succeeded');
    await waitFor(async () => (await stack.fetch('/v1/system-check')).status === 200, { what: 'every component to be ready', timeoutMs: 60_000, intervalMs: 500 });
  }, 900_000);
});

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/** A small seeded generator (Mulberry32): the same seed, the same schedule. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
