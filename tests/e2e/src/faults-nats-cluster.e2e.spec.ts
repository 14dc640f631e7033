import { ClusterMember, startNatsCluster, TestNatsCluster } from '@trainyard/testing';
import {
  describeFault,
  FaultContext,
  isSuccess,
  jobEvents,
  runFault,
  SFT_LINES,
  startFaultStack,
  waitForSteps,
  writeFaultSummary,
} from './support/faults';
import { Stack } from './support/stack';

// Faults, part 4: one server of a three-server NATS cluster. The stack's apps are given all
// three servers (NATS_URL) and keep every work queue and blob bucket on all three
// (JETSTREAM_REPLICAS=3), as the production overlay's nats-cluster component runs them. The
// server killed is the JetStream meta leader, the worst one to lose. See docs/reliability.md.

describe('faults: one server of a three-server NATS cluster killed during chat traffic and training', () => {
  let stack: Stack<TestNatsCluster>;
  let ctx: FaultContext;
  const summary: Record<string, string> = {};

  beforeAll(async () => {
    const started = await startFaultStack(undefined, undefined, { nats: () => startNatsCluster(3), env: { JETSTREAM_REPLICAS: '3' } });
    [ctx, stack] = [started, started.stack];
  }, 180_000);

  afterAll(async () => {
    writeFaultSummary(stack, summary);
    await stack?.stop();
  }, 60_000);

  it('chat answers and the job trains on while the server is gone; nothing is lost or doubled', async () => {
    let victim: ClusterMember | undefined;
    const report = await runFault(ctx, {
      name: 'nats-member-killed',
      restarts: [],
      kill: async () => {
        victim = await metaLeader(stack.nats);
        await victim.kill();
      },
      restart: async () => {
        await victim?.start();
        await stack.nats.waitForJetStream();
      },
      // Training goes on through the loss: the job takes further steps while the server is down
      // (unless it took its last step between the kill and this count: a job has SFT_LINES steps).
      whileDown: async (jobId) => {
        const steps = (await jobEvents(stack, ctx.key, jobId)).filter((e) => e.type === 'gradient_step').length;
        await waitForSteps(stack, ctx.key, jobId, Math.min(steps + 1, SFT_LINES));
      },
    });
    summary['nats-member'] = describeFault(report);
    // On one server, everything sent while it is down fails; on the cluster, requests are answered.
    expect(report.whileDown.some(isSuccess)).toBe(true);
    expect(report.job.status).toBe('succeeded');
  }, 420_000);
});

/** The cluster member that leads JetStream's meta group now. */
async function metaLeader(cluster: TestNatsCluster): Promise<ClusterMember> {
  const name = await cluster.metaLeader();
  const member = cluster.members.find((m) => m.name === name);
  if (!member) throw new Error(`no member is the meta leader ${name}`);
  return member;
}
