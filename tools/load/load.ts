// Load: chat completions and training-job reads through the whole stack (gateway, NATS, chat,
// registry, orchestrator, PostgreSQL, inference worker on wasm, tiny model) at rising
// concurrency, to see where the gateway starts shedding load and that it sheds with 429 and
// Retry-After instead of queueing without bound.
//
//   npx tsx --tsconfig tsconfig.base.json tools/load/load.ts [--levels 1,2,4,8,16,32,64] [--seconds 8] [--max-requests 5000]
//
// Loopback only (the stack it starts listens on 127.0.0.1). Bounded: every level stops after
// --seconds or --max-requests requests, whichever comes first, and a request gives up after
// 60 s, so a run lasts at most levels x 2 x (seconds + 60 s) plus start-up. Each virtual user
// sends its next request as soon as it has an answer, and waits as long as Retry-After says
// after a 429, as the OpenAI SDKs do. Prints a markdown section for docs/reliability.md.
import { waitFor } from '@trainyard/testing';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { Stack } from '../../tests/e2e/src/support/stack';
import { runBenchmark } from '../bench/bench-support';

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '1,2,4,8,16,32,64' },
    seconds: { type: 'string', default: '8' },
    'max-requests': { type: 'string', default: '5000' },
    'chat-tokens': { type: 'string', default: '16' },
  },
});
const LEVELS = values.levels.split(',').map(Number);
const SECONDS = Number(values.seconds);
const MAX_REQUESTS = Number(values['max-requests']);
const CHAT_TOKENS = Number(values['chat-tokens']);
const REQUEST_TIMEOUT_MS = 60_000;
if (LEVELS.some((n) => !Number.isInteger(n) || n < 1 || n > 512) || !(SECONDS > 0 && SECONDS <= 120) || !(MAX_REQUESTS > 0 && MAX_REQUESTS <= 100_000)) {
  throw new Error('levels must be integers 1..512, seconds 1..120, max-requests 1..100000');
}
/** The per-key rate is a policy for one client, not capacity: it is raised so that it does not hide where capacity ends. */
const RATE_LIMIT = 100_000_000;

interface Outcome {
  status: number | 'error';
  ms: number;
  /** For a 429: which limit refused it. */
  reason?: string;
  retryAfterS?: number;
}

interface LevelResult {
  concurrency: number;
  outcomes: Outcome[];
  seconds: number;
  /** Highest RSS seen during the level, MB, per process. */
  rss: Record<string, number>;
}

const REASONS: [RegExp, string][] = [
  [/inference workers are busy/, 'chat admission'],
  [/concurrent requests for this API key/, 'key concurrency'],
  [/Rate limit reached/, 'key rate'],
  [/at capacity/, 'gateway in-flight'],
];

function reasonOf(body: string): string {
  return REASONS.find(([pattern]) => pattern.test(body))?.[1] ?? 'other';
}

const percentile = (xs: number[], p: number): number | undefined => {
  if (xs.length === 0) return undefined;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
const fmtMs = (ms: number | undefined) => (ms === undefined ? '-' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

/** The stack's processes: this process's children running dist/apps/<name>/main.js. */
function stackProcesses(): Map<string, number> {
  const found = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const app = /dist\/apps\/([a-z-]+)\/main\.js/.exec(readFileSync(`/proc/${entry}/cmdline`, 'utf8'))?.[1];
      if (app) found.set(app, Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** A field of /proc/<pid>/status in MB (VmRSS now, VmHWM the peak so far). */
function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs `concurrency` virtual users for SECONDS (or MAX_REQUESTS requests), sampling memory meanwhile. */
async function runLevel(concurrency: number, send: (i: number) => Promise<Response>, processes: Map<string, number>): Promise<LevelResult> {
  const outcomes: Outcome[] = [];
  const rss: Record<string, number> = {};
  const sample = () => {
    for (const [name, pid] of processes) rss[name] = Math.max(rss[name] ?? 0, memoryMb(pid, 'VmRSS'));
  };
  const sampler = setInterval(sample, 250);
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  let issued = 0;
  const user = async () => {
    while (performance.now() < deadline && issued < MAX_REQUESTS) {
      const i = issued++;
      const t = performance.now();
      let outcome: Outcome;
      try {
        const res = await send(i);
        const body = await res.text();
        outcome = { status: res.status, ms: performance.now() - t };
        if (res.status === 429) {
          outcome.reason = reasonOf(body);
          outcome.retryAfterS = Number(res.headers.get('retry-after') ?? 1);
        }
      } catch {
        outcome = { status: 'error', ms: performance.now() - t };
      }
      outcomes.push(outcome);
      const pause = outcome.status === 429 ? (outcome.retryAfterS ?? 1) * 1000 : outcome.status === 'error' ? 100 : 0;
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, deadline - performance.now()))));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, user));
  clearInterval(sampler);
  sample();
  return { concurrency, outcomes, seconds: (performance.now() - started) / 1000, rss };
}

function table(results: LevelResult[]): string {
  const rows = results.map(({ concurrency, outcomes, seconds, rss }) => {
    const ok = outcomes.filter((o) => typeof o.status === 'number' && o.status < 300);
    const shed = outcomes.filter((o) => o.status === 429);
    const failed = outcomes.filter((o) => typeof o.status === 'number' && o.status >= 500);
    const errors = outcomes.filter((o) => o.status === 'error');
    const other = outcomes.length - ok.length - shed.length - failed.length - errors.length;
    const reasons = [...new Set(shed.map((o) => o.reason))].join(', ') || '-';
    const okMs = ok.map((o) => o.ms);
    const total = Object.values(rss).reduce((s, v) => s + v, 0);
    return `| ${concurrency} | ${outcomes.length} | ${ok.length} | ${shed.length} | ${failed.length} | ${errors.length + other} | ${fmtMs(percentile(okMs, 50))} | ${fmtMs(percentile(okMs, 99))} | ${fmtMs(percentile(shed.map((o) => o.ms), 99))} | ${(ok.length / seconds).toFixed(1)} | ${reasons} | ${(rss['gateway'] ?? 0).toFixed(0)} | ${total.toFixed(0)} |`;
  });
  return [
    '| concurrency | requests | 2xx | 429 | 5xx | other | 2xx p50 | 2xx p99 | 429 p99 | 2xx/s | 429 from | gateway RSS MB | all RSS MB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function summary(name: string, results: LevelResult[]): string {
  const clean = (r: LevelResult) => r.outcomes.every((o) => o.status !== 'error' && (o.status as number) < 500);
  let held = 0;
  for (const r of results) {
    if (!clean(r)) break;
    held = r.concurrency;
  }
  const firstShed = results.find((r) => r.outcomes.some((o) => o.status === 429));
  return `- ${name}: held up to concurrency ${held || 'none'} with zero 5xx and zero errors${results.every(clean) ? ' (every level)' : ''}; 429s begin at ${firstShed ? `concurrency ${firstShed.concurrency}` : 'no level measured'}.`;
}

async function main() {
  const stack = await Stack.start({ env: { LOG_LEVEL: 'warn', KEY_RATE_LIMIT_REQUESTS: String(RATE_LIMIT) } });
  try {
    const model = stack.addTinyModel('load/tiny');
    const key = (await stack.createKey('load')).key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const url = (path: string) => `${stack.baseUrl}${path}`;

    const chatBody = JSON.stringify({ model, messages: [{ role: 'user', content: 'Say something about trains.' }], max_tokens: CHAT_TOKENS, temperature: 0 });
    const chat = () => fetch(url('/v1/chat/completions'), { method: 'POST', headers, body: chatBody, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    // Chat admits work once it has seen the worker; this also loads the model there.
    await waitFor(async () => (await chat()).ok, { what: 'a first chat completion', timeoutMs: 120_000, intervalMs: 500 });

    // A finished SFT job to read, as ART's client reads its jobs.
    const created = await stack.json<{ id: string }>('POST', '/v1/preview/models', key, { entity: null, project: 'load', name: 'agent', base_model: model, return_existing: true });
    const lines = ['Say hi.', 'Say bye.', 'Say yes.'].map((q) => JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: 'ok' }] }));
    const form = new FormData();
    form.append('purpose', 'fine-tune');
    form.append('file', new Blob([lines.join('\n')]), 'data.jsonl');
    const file = (await (await stack.fetch('/v1/files', { method: 'POST', key, body: form })).json()) as { id: string };
    const job = await stack.json<{ id: string }>('POST', '/v1/preview/sft-training-jobs', key, { model_id: created.id, training_data_url: file.id });
    await waitFor(
      async () => ['succeeded', 'failed'].includes((await stack.json<{ status: string }>('GET', `/v1/preview/training-jobs/${job.id}`, key)).status),
      { what: 'the SFT job to finish', timeoutMs: 120_000, intervalMs: 500 },
    );
    const readPaths = [`/v1/preview/training-jobs/${job.id}`, `/v1/preview/training-jobs/${job.id}/events?limit=20`];
    const read = (i: number) => fetch(url(readPaths[i % readPaths.length]), { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });

    const processes = stackProcesses();
    const workloads: [string, (i: number) => Promise<Response>][] = [
      [`chat completions (POST /v1/chat/completions, ${CHAT_TOKENS} tokens, not streamed)`, chat],
      ['training-job reads (GET /v1/preview/training-jobs/{id} and .../events, alternating)', read],
    ];
    const results: [string, LevelResult[]][] = [];
    for (const [name, send] of workloads) {
      const levels: LevelResult[] = [];
      for (const concurrency of LEVELS) {
        levels.push(await runLevel(concurrency, send, processes));
        console.error(`${name.split(' (')[0]} @ ${concurrency}: ${levels.at(-1)?.outcomes.length} requests`);
        // Let queues and sockets settle before the next level.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      results.push([name, levels]);
    }
    const peaks = [...processes].map(([name, pid]) => `${name} ${memoryMb(pid, 'VmHWM').toFixed(0)} MB`).join(', ');

    const cpu = cpus()[0]?.model ?? 'unknown';
    console.log(`Measured by \`npx tsx --tsconfig tsconfig.base.json tools/load/load.ts --levels ${LEVELS.join(',')} --seconds ${SECONDS}\` on ${new Date().toISOString().slice(0, 10)}:
${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GB, Node ${process.version}, wasm backend; the whole stack on this machine, one
inference worker (MAX_BATCH_SEQUENCES 8, MAX_QUEUED_COMPLETIONS 16), the engine's tiny model, one API key.
Default gateway limits (KEY_CONCURRENCY_LIMIT 32, MAX_IN_FLIGHT_REQUESTS 256) except KEY_RATE_LIMIT_REQUESTS, raised
so that one key's rate allowance does not hide where capacity ends. Each level ran ${SECONDS} s (or ${MAX_REQUESTS} requests);
each virtual user sends its next request on an answer and waits Retry-After after a 429. Latencies are
the whole request as the client sees it; RSS columns are the highest resident set sampled every 250 ms during the level.

${results.map(([name, levels]) => `### ${name}\n\n${table(levels)}`).join('\n\n')}

${results.map(([name, levels]) => summary(name.split(' (')[0], levels)).join('\n')}
- Peak RSS over the whole run (VmHWM): ${peaks}.
`);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
