// Chat completions through the whole stack (gateway, NATS, chat, registry, inference
// worker on wasm), measured with the official openai client on this machine.
//
//   npx tsx --tsconfig tsconfig.base.json tools/bench/chat-completions.bench.ts [--preset smollm2-135m|tiny] [--workers N] [--dtype F32|BF16] [--read-ahead auto|on|off] [--one-row-tile auto|narrow|wide|paired] [--matmul-threads N]
//
// --workers: inference worker processes (default: one per core, as `npm start` runs them).
// --dtype: how the model's weights are stored (default F32; SmolLM2 itself ships BF16, which
// the workers' matmul kernel then reads as bf16, with the same results in half the bytes).
// --read-ahead, --one-row-tile: the workers' MATMUL_READ_AHEAD and MATMUL_ONE_ROW_TILE (default
// auto: timed on the model at load).
// --matmul-threads: the workers' MATMUL_THREADS (default 1); with --workers 1 and the machine's
// core count, one worker divides every projection between all cores.
// WARMUP=N: unmeasured calls of each path before the overhead figure is taken (default 300).
// BENCH_LOG_LEVEL=log keeps the stack's request logs (under tmp/e2e-logs) for a look afterwards.
//
// Prints a markdown section for docs/benchmarks.md. Loopback only, bounded in count and time.
import {
  DecodeBatch,
  describeMatMulPlan,
  loadModel,
  makeModel,
  ONE_ROW_TILE_SETTINGS,
  OneRowTileSetting,
  PromptCache,
  READ_AHEAD_SETTINGS,
  ReadAheadSetting,
  selectBackend,
  SequenceGenerator,
} from '@trainyard/engine';
import OpenAI from 'openai';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Stack } from '../../tests/e2e/src/support/stack';
import { median, runBenchmark } from './bench-support';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'smollm2-135m' },
    tokens: { type: 'string', default: '64' },
    // As `npm start` runs them (scripts/run-all.mjs): one per core.
    workers: { type: 'string', default: String(availableParallelism()) },
    dtype: { type: 'string', default: 'F32' },
    'read-ahead': { type: 'string', default: 'auto' },
    'one-row-tile': { type: 'string', default: 'auto' },
    'matmul-threads': { type: 'string', default: '1' },
  },
});
const preset = values.preset as 'smollm2-135m' | 'tiny';
const TOKENS = Number(values.tokens);
// Inference worker processes: wasm runs one thread, so one worker per core uses the machine.
const WORKERS = Number(values.workers);
const DTYPE = values.dtype as 'F32' | 'BF16';
if (DTYPE !== 'F32' && DTYPE !== 'BF16') throw new Error(`--dtype ${DTYPE}: F32 or BF16`);
const READ_AHEAD = values['read-ahead'] as ReadAheadSetting;
if (!READ_AHEAD_SETTINGS.includes(READ_AHEAD)) throw new Error(`--read-ahead ${READ_AHEAD}: one of ${READ_AHEAD_SETTINGS.join(', ')}`);
const ONE_ROW_TILE = values['one-row-tile'] as OneRowTileSetting;
if (!ONE_ROW_TILE_SETTINGS.includes(ONE_ROW_TILE)) throw new Error(`--one-row-tile ${ONE_ROW_TILE}: one of ${ONE_ROW_TILE_SETTINGS.join(', ')}`);
const MATMUL_THREADS = Number(values['matmul-threads']);
if (!Number.isInteger(MATMUL_THREADS) || MATMUL_THREADS < 1) throw new Error(`--matmul-threads ${values['matmul-threads']}: a whole number of at least 1`);
const JSON_PAIRS = 8;
// The overhead figure: calls of each path run unmeasured first, then measured.
const WARMUP = Number(process.env.WARMUP ?? 300);
const OVERHEAD_SAMPLES = 100;

async function streamOnce(client: OpenAI, model: string, extra: Record<string, unknown> = {}) {
  const started = performance.now();
  let firstToken = 0;
  let tokens = 0;
  let cached = 0;
  let text = '';
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Tell me a long story about a train yard.' }],
    max_tokens: TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta?.content;
    if (delta) {
      if (!firstToken) firstToken = performance.now() - started;
      text += delta;
    }
    if (chunk.usage) {
      tokens = chunk.usage.completion_tokens;
      cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
    }
  }
  return { ms: performance.now() - started, ttft: firstToken, tokens, text, cached };
}

let questions = 0;
/**
 * A question no worker has seen: workers reuse the prompts they prefilled (PROMPT_CACHE_MB),
 * and a new one shares only the chat template's beginning with them.
 */
function newQuestion(): Record<string, unknown> {
  return { messages: [{ role: 'user', content: `${process.pid}-${++questions}: tell me a long story about a train yard.` }] };
}

const tokensPerSecond = (runs: { tokens: number }[], ms: number) => (runs.reduce((s, r) => s + r.tokens, 0) / ms) * 1000;

/**
 * A trivial local server that answers every request with the same valid one-token completion:
 * the openai client's own cost per call (building the request, HTTP over loopback, parsing the
 * answer) with no gateway behind it.
 */
async function startFixedCompletionServer(model: string): Promise<Server> {
  const body = JSON.stringify({
    id: 'chatcmpl-floor',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'a', refusal: null }, logprobs: null, finish_reason: 'length' }],
    usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

async function main() {
  const stack = await Stack.start({ env: { MAX_BATCH_SEQUENCES: '8', MAX_COMPLETION_TOKENS: '4096', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', MATMUL_READ_AHEAD: READ_AHEAD, MATMUL_ONE_ROW_TILE: ONE_ROW_TILE, MATMUL_THREADS: String(MATMUL_THREADS) } });
  try {
    for (let w = 1; w < WORKERS; w++) await stack.startReplica('inference-worker');
    const id = `bench/${preset}`;
    makeModel({ preset, out: join(stack.modelsDir, id), seed: 1, dtype: DTYPE });
    // The in-process copy for the overhead figure.
    await selectBackend('wasm');
    const lm = await loadModel(join(stack.modelsDir, id), { inferenceOnly: true, readAhead: READ_AHEAD, oneRowTile: ONE_ROW_TILE, matmulThreads: MATMUL_THREADS });
    const plan = describeMatMulPlan(lm.model.matmulPlan);
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('bench')).key, maxRetries: 0, timeout: 600_000 });
    // Load the model on every worker: concurrent requests reach all of them, since a worker
    // takes no more work while it loads. A cold worker would slow the single-stream figure.
    await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id)));

    // The machine's speed drifts (other tenants of the host): what is compared is measured in
    // alternation, round by round, and each ratio is the median of the rounds' ratios.
    // Two workloads: one prompt for every stream (as an RL group's samples: after the first,
    // the workers reuse its prefill), and a new prompt for every stream (each is prefilled).
    const ROUNDS = 5;
    const single = [];
    const singleNew = [];
    const concurrentRates: number[] = [];
    const scaling: number[] = [];
    const scalingNew: number[] = [];
    // As ART samples its rollouts: temperature 1, with the logprobs that RL training needs.
    const rollout = { temperature: 1, logprobs: true };
    const rolloutSingle: number[] = [];
    const rolloutConcurrent: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const one = await streamOnce(client, id);
      single.push(one);
      let started = performance.now();
      const runs = await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id)));
      const rate = tokensPerSecond(runs, performance.now() - started);
      concurrentRates.push(rate);
      scaling.push(rate / tokensPerSecond([one], one.ms));

      const oneNew = await streamOnce(client, id, newQuestion());
      singleNew.push(oneNew);
      started = performance.now();
      const runsNew = await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id, newQuestion())));
      scalingNew.push(tokensPerSecond(runsNew, performance.now() - started) / tokensPerSecond([oneNew], oneNew.ms));

      const oneRollout = await streamOnce(client, id, rollout);
      rolloutSingle.push(tokensPerSecond([oneRollout], oneRollout.ms));
      started = performance.now();
      const rollouts = await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id, rollout)));
      rolloutConcurrent.push(tokensPerSecond(rollouts, performance.now() - started));
    }
    const singleRate = median(single.map((r) => tokensPerSecond([r], r.ms)));
    const ttft = median(single.map((r) => r.ttft));
    const ttftNew = median(singleNew.map((r) => r.ttft));
    const templateReuse = median(singleNew.map((r) => r.cached));
    const concurrentRate = median(concurrentRates);

    // JSON mode against plain decoding, both after the first token (prefill is the same work),
    // in alternating pairs. The schema asks for an array of at least TOKENS / 4 integers, so
    // that a random-weights model keeps writing JSON to the end of the budget (instead of
    // closing "{}" at once), where the constrained decoder works at closing it in time. Every
    // JSON answer is checked to parse.
    const decodeRate = (r: { ms: number; ttft: number; tokens: number }) => ((r.tokens - 1) / (r.ms - r.ttft)) * 1000;
    const longJson = {
      type: 'json_schema',
      json_schema: { name: 'long', schema: { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: TOKENS / 4 } }, required: ['items'] } },
    };
    const plainRates: number[] = [];
    const jsonRates: number[] = [];
    // Eight pairs: one stream's rate moves by ±15 % with the machine from one pair to the next.
    for (let pair = 0; pair < JSON_PAIRS; pair++) {
      plainRates.push(decodeRate(await streamOnce(client, id)));
      const answer = await streamOnce(client, id, { response_format: longJson });
      JSON.parse(answer.text);
      jsonRates.push(decodeRate(answer));
    }
    const jsonRate = median(jsonRates);
    const plainDecodeRate = median(plainRates);
    const jsonCost = median(plainRates.map((plain, i) => 1 - jsonRates[i] / plain));

    // Overhead: a one-token request through the stack against the same work done by the
    // engine in this process as a worker does it (chat template, tokenizing, the prompt from
    // a prompt cache after the first time, one sample).
    const render = () => lm.tokenizer.encode(lm.chatTemplate?.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }) ?? 'hi');
    const prompts = new PromptCache(2 ** 26);
    const directOnce = async () => {
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const generator = new SequenceGenerator(lm.tokenizer, { maxTokens: 1, temperature: 0 }, lm.eosTokenIds);
        generator.next(await batch.join(0, render(), { cache: prompts, namespace: '' }));
      } finally {
        batch.dispose();
      }
    };
    // The first pass packs the weights for XNNPACK: seconds in which this process's event loop
    // is blocked, while the gateway closes the HTTP client's idle keep-alive sockets. A pause
    // lets the client see those closes before it sends again (else it may write to a closed socket).
    await directOnce();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The client's floor: the same call against a local server that answers at once, measured
    // in the same alternation, so that the overhead can also be read without the client's cost.
    const floorServer = await startFixedCompletionServer(id);
    const floorClient = new OpenAI({ baseURL: `http://127.0.0.1:${(floorServer.address() as AddressInfo).port}/v1`, apiKey: 'floor', maxRetries: 0 });
    const oneToken = { model: id, messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 1, temperature: 0 };
    const direct: number[] = [];
    const failures: string[] = [];
    const through: number[] = [];
    const clientFloor: number[] = [];
    // The first 30 calls of each path, before V8 has optimized the stack's code: reported beside
    // the steady-state figure.
    const cold = { direct: [] as number[], through: [] as number[] };
    // All three paths are first run WARMUP times unmeasured: a server is measured in its steady
    // state, with its code compiled by V8's optimizing tier. Until this point the stack has
    // served streamed requests only: its non-streamed path and the in-process copy have run
    // once, the floor server not at all, and their first few hundred calls run slower code.
    for (let i = 0; i < WARMUP + OVERHEAD_SAMPLES; i++) {
      const measured = i >= WARMUP;
      let t = performance.now();
      await directOnce();
      const directMs = performance.now() - t;
      if (measured) direct.push(directMs);
      if (i < 30) cold.direct.push(directMs);
      t = performance.now();
      try {
        await client.chat.completions.create(oneToken);
        const throughMs = performance.now() - t;
        if (measured) through.push(throughMs);
        if (i < 30) cold.through.push(throughMs);
      } catch (err) {
        // Counted and shown with the figures rather than ending the run.
        failures.push(`request ${i + 1}: ${(err as Error).message} (${String((err as { cause?: { cause?: unknown } }).cause?.cause ?? '')})`);
      }
      t = performance.now();
      await floorClient.chat.completions.create(oneToken);
      if (measured) clientFloor.push(performance.now() - t);
    }
    await new Promise((resolve) => floorServer.close(resolve));
    lm.dispose();
    const overhead = median(through) - median(direct);

    const cpu = cpus()[0]?.model ?? 'unknown';
    console.log(`## Chat completions through the stack (${preset}${DTYPE === 'BF16' ? ', bf16 weights' : ''})

Measured by \`npx tsx --tsconfig tsconfig.base.json tools/bench/chat-completions.bench.ts --preset ${preset} --workers ${WORKERS}${DTYPE === 'BF16' ? ' --dtype BF16' : ''}${READ_AHEAD === 'auto' ? '' : ` --read-ahead ${READ_AHEAD}`}${ONE_ROW_TILE === 'auto' ? '' : ` --one-row-tile ${ONE_ROW_TILE}`}${MATMUL_THREADS === 1 ? '' : ` --matmul-threads ${MATMUL_THREADS}`}\` on ${new Date().toISOString().slice(0, 10)}:
${cpu}, ${cpus().length} cores, Node ${process.version}, wasm backend, ${WORKERS === 1 ? 'one inference worker (MAX_BATCH_SEQUENCES 8)' : `${WORKERS} inference workers (MAX_BATCH_SEQUENCES 8 each)`}${MATMUL_THREADS === 1 ? '' : `, the matmul on ${MATMUL_THREADS} threads per worker`}, weights stored ${DTYPE === 'BF16' ? 'in bf16' : 'in f32'},
matmul plan (as the bench's own process chose it): ${plan},
${TOKENS}-token greedy completions streamed with the official openai client over loopback.

| figure | measured | target |
|---|---|---|
| single-stream decode, one prompt (reused after its first prefill) | ${singleRate.toFixed(1)} tokens/s | |
| aggregate decode, 8 concurrent streams of that prompt | ${concurrentRate.toFixed(1)} tokens/s (${median(scaling).toFixed(2)}x single: median of ${ROUNDS} rounds, ${scaling.map((x) => x.toFixed(2)).join(', ')}) | ≥ 4x single |
| 8 concurrent streams of 8 new prompts, against one new prompt | ${median(scalingNew).toFixed(2)}x (median of ${ROUNDS} rounds, ${scalingNew.map((x) => x.toFixed(2)).join(', ')}) | |
| sampled as ART's rollouts (temperature 1, logprobs): one stream / 8 concurrent streams (medians of ${ROUNDS} rounds) | ${median(rolloutSingle).toFixed(1)} / ${median(rolloutConcurrent).toFixed(1)} tokens/s | |
| time to first token, concurrency 1, a new prompt (median of ${ROUNDS}; ${templateReuse} of its tokens, the chat template's beginning, reused) | ${ttftNew.toFixed(0)} ms | reported |
| time to first token, concurrency 1, a prompt seen before (median of ${ROUNDS}) | ${ttft.toFixed(0)} ms | |
| decode after the first token, plain | ${plainDecodeRate.toFixed(1)} tokens/s | |
| decode after the first token, JSON mode (json_schema, array of at least ${TOKENS / 4} integers) | ${jsonRate.toFixed(1)} tokens/s (${(jsonCost * 100).toFixed(1)}% slower: median of ${JSON_PAIRS} alternating pairs) | ≤ 15% slower |
| one-token request through the stack (median of ${through.length} after ${WARMUP} unmeasured${failures.length ? `; ${failures.length} failed: ${failures[0]}` : ''}) | ${median(through).toFixed(1)} ms | |
| same work in-process, as a worker does it (median of ${direct.length}) | ${median(direct).toFixed(1)} ms | |
| the openai client's own floor: the same call to a local server answering at once (median of ${clientFloor.length}) | ${median(clientFloor).toFixed(1)} ms | |
| gateway + NATS + scheduling overhead (difference of medians) | ${overhead.toFixed(1)} ms | < 5 ms |
| the same overhead less the client's floor | ${(overhead - median(clientFloor)).toFixed(1)} ms | |
| the same overhead over the first 30 calls of each path, before the warm-up (through the stack ${median(cold.through).toFixed(1)} ms, in-process ${median(cold.direct).toFixed(1)} ms) | ${(median(cold.through) - median(cold.direct)).toFixed(1)} ms | |
`);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
