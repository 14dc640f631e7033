// Where a chat completion's time goes between the processes of the stack: a one-token,
// non-streamed completion on the tiny model, with a wildcard NATS subscriber noting when each
// message of the request passes through the nats-server, relative to the HTTP call. Also the
// floor under it on this machine: a NATS request/reply between two idle processes, and a flush
// (one round trip to nats-server).
//
//   npx tsx --tsconfig tsconfig.base.json tools/bench/request-timeline.bench.ts
//
// Prints markdown for docs/benchmarks.md. Loopback only.
import { makeModel } from '@trainyard/engine';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { connect, NatsConnection } from 'nats';
import { Stack } from '../../tests/e2e/src/support/stack';
import { median, runBenchmark } from './bench-support';

const REQUESTS = 30;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What each message's subject says it is, for the table. */
function describe(subject: string): string {
  if (subject.startsWith('chat.completion.start')) return 'gateway asks chat to start the completion';
  if (subject.startsWith('registry.model.resolve')) return 'chat asks the registry to resolve the model name';
  if (subject.includes('.work.inference.')) return 'work item published / delivered to a worker';
  if (subject.startsWith('$JS.ACK')) return 'worker acknowledges the work item';
  if (subject.startsWith('$JS.API.CONSUMER.MSG.NEXT')) return 'worker asks for its next work item';
  if (subject.startsWith('chat.completion.events')) return 'worker event to the gateway';
  if (subject.startsWith('_INBOX')) return 'a reply (registry, JetStream or chat)';
  return subject;
}

async function timeline(stack: Stack, nc: NatsConnection, key: string): Promise<{ rows: [number, string][]; total: number }[]> {
  let t0 = 0;
  let rows: [number, string][] = [];
  const sub = nc.subscribe('>', { callback: (_err, msg) => t0 && rows.push([performance.now() - t0, describe(msg.subject)]) });
  await nc.flush();
  const runs = [];
  for (let i = 0; i < REQUESTS; i++) {
    rows = [];
    t0 = performance.now();
    const res = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench/tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1, temperature: 0 }),
    });
    await res.text();
    const total = performance.now() - t0;
    t0 = 0;
    runs.push({ rows, total });
    await sleep(100);
  }
  sub.unsubscribe();
  return runs;
}

/** Request/reply between this process and an idle echo process, and a flush, back to back and after idle gaps. */
async function floor(natsUrl: string): Promise<string[]> {
  const echo = spawn(
    process.execPath,
    ['-e', `require('nats').connect({servers:${JSON.stringify(natsUrl)}}).then(async (nc)=>{nc.subscribe('bench.echo',{callback:(e,m)=>m.respond(m.data)});await nc.flush();console.log('ready')})`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => echo.stdout.once('data', resolve));
  const nc = await connect({ servers: natsUrl });
  const lines: string[] = [];
  try {
    for (const gap of [0, 20]) {
      const rtt: number[] = [];
      const flush: number[] = [];
      for (let i = 0; i < 100; i++) {
        if (gap) await sleep(gap);
        let t = performance.now();
        await nc.request('bench.echo', new Uint8Array(100));
        rtt.push(performance.now() - t);
        if (gap) await sleep(gap);
        t = performance.now();
        await nc.flush();
        flush.push(performance.now() - t);
      }
      const when = gap ? `after ${gap} ms idle` : 'back to back';
      lines.push(`| NATS request/reply to another process, ${when} (median of 100) | ${median(rtt).toFixed(2)} ms |`);
      lines.push(`| NATS flush (round trip to nats-server), ${when} (median of 100) | ${median(flush).toFixed(2)} ms |`);
    }
  } finally {
    await nc.close();
    echo.kill();
  }
  return lines;
}

async function main() {
  const stack = await Stack.start({ env: { LOG_LEVEL: 'warn' } });
  try {
    makeModel({ preset: 'tiny', out: join(stack.modelsDir, 'bench/tiny'), seed: 1 });
    const key = (await stack.createKey('bench')).key;
    const nc = await connect({ servers: stack.nats.url });
    const runs = await timeline(stack, nc, key);
    await nc.close();
    // The run whose total is the median one, as a typical example.
    const typical = [...runs].sort((a, b) => a.total - b.total)[Math.floor(runs.length / 2)];
    const floorLines = await floor(stack.nats.url);
    console.log(`## Where a completion's time goes (tiny, one-token, not streamed)

Measured by \`npx tsx --tsconfig tsconfig.base.json tools/bench/request-timeline.bench.ts\` on ${new Date().toISOString().slice(0, 10)}:
when each NATS message of the median request of ${REQUESTS} passed through nats-server, from the start of the HTTP call
(total ${typical.total.toFixed(1)} ms; median of all ${median(runs.map((r) => r.total)).toFixed(1)} ms).

| ms | message |
|---|---|
${typical.rows.map(([ms, what]) => `| ${ms.toFixed(2)} | ${what} |`).join('\n')}
| ${typical.total.toFixed(2)} | the HTTP response is read |

| floor on this machine | measured |
|---|---|
${floorLines.join('\n')}
`);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
