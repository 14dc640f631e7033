import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, natsServerBinary, portAnswers } from './nats-server';
import { waitFor } from './wait';

/** One server of a TestNatsCluster. */
export interface ClusterMember {
  name: string;
  /** Client port. */
  port: number;
  /** SIGKILL: the server dies at once, keeping its JetStream store for start(). */
  kill(): Promise<void>;
  /** Starts it again (after kill) on the same ports and store; a no-op while it runs. */
  start(): Promise<void>;
  running(): boolean;
}

/**
 * A private NATS cluster with JetStream for one test file: `size` nats-servers on loopback,
 * routed to each other, each with its own store. `url` lists every server, as a deployment's
 * NATS_URL does, so clients move to another server when theirs goes.
 */
export interface TestNatsCluster {
  url: string;
  members: ClusterMember[];
  /**
   * Resolves once the cluster has a JetStream meta leader among the running servers and every
   * other running server is current in its meta group: before that, a stream of several
   * replicas can find "no suitable peers for placement".
   */
  waitForJetStream(timeoutMs?: number): Promise<void>;
  /** The name of the server that leads JetStream's meta group, as the running servers report it; undefined while there is none. */
  metaLeader(): Promise<string | undefined>;
  stop(): Promise<void>;
}

export async function startNatsCluster(size = 3): Promise<TestNatsCluster> {
  const binary = natsServerBinary();
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort(), monitor: await freePort() })));
  const routes = ports.map((p) => `nats://127.0.0.1:${p.route}`).join(',');
  const members = ports.map((p, i): ClusterMember & { stop(): Promise<void>; monitor: number; storeDir: string } => {
    const name = `n${i}`;
    const storeDir = mkdtempSync(join(tmpdir(), `trainyard-nats-${name}-`));
    let child: ChildProcess | undefined;
    const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
    const stop = async (signal: NodeJS.Signals) => {
      if (!child || !running()) return;
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill(signal);
      await exited;
    };
    const args = ['-a', '127.0.0.1', '-p', String(p.client), '-m', String(p.monitor), '-n', name, '-js', '-sd', storeDir];
    args.push('--cluster_name', 'trainyard', '--cluster', `nats://127.0.0.1:${p.route}`, '--routes', routes);
    return {
      name,
      port: p.client,
      monitor: p.monitor,
      storeDir,
      running,
      kill: () => stop('SIGKILL'),
      start: async () => {
        if (running()) return;
        child = spawn(binary, args, { stdio: 'ignore' });
        await waitFor(() => portAnswers(p.client), { what: `nats-server ${name} on port ${p.client}`, timeoutMs: 10_000 });
      },
      stop: async () => {
        await stop('SIGTERM');
        rmSync(storeDir, { recursive: true, force: true });
      },
    };
  });
  await Promise.all(members.map((m) => m.start()));
  /** A server's view of the meta group (its monitoring endpoint's /jsz); the leader's lists the other peers. */
  const metaCluster = async (m: (typeof members)[number]) =>
    (
      (await fetch(`http://127.0.0.1:${m.monitor}/jsz`)
        .then((r) => r.json())
        .catch(() => undefined)) as { meta_cluster?: { leader?: string; replicas?: { name: string; current: boolean }[] } } | undefined
    )?.meta_cluster;
  const metaLeader = async (): Promise<string | undefined> => {
    for (const m of members.filter((member) => member.running())) {
      const leader = (await metaCluster(m))?.leader;
      if (leader) return leader;
    }
    return undefined;
  };
  /** Whether a running server leads the meta group with every other running server current in it. */
  const jetStreamReady = async (): Promise<boolean> => {
    const running = members.filter((member) => member.running());
    for (const m of running) {
      const meta = await metaCluster(m);
      if (meta?.leader !== m.name) continue;
      const current = new Set((meta.replicas ?? []).filter((r) => r.current).map((r) => r.name));
      return running.every((other) => other === m || current.has(other.name));
    }
    return false;
  };
  const cluster: TestNatsCluster = {
    url: members.map((m) => `nats://127.0.0.1:${m.port}`).join(','),
    members,
    metaLeader,
    waitForJetStream: async (timeoutMs = 30_000) => {
      await waitFor(jetStreamReady, { what: 'the NATS cluster to elect a JetStream meta leader with every running server current', timeoutMs, intervalMs: 200 });
    },
    stop: async () => {
      await Promise.all(members.map((m) => m.stop()));
    },
  };
  await cluster.waitForJetStream();
  return cluster;
}
