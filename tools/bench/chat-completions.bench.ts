// Chat completions through the whole stack (gateway, NATS, chat, registry, inference
// worker on wasm), measured with the official openai client on this machine.
//
//   npx tsx --tsconfig tsconfig.base.json tools/bench/chat-completions.bench.ts [--preset smollm2-135m|tiny] [--workers N]
//
// --workers: inference worker processes (default: one per core, as `npm start` runs them).
//
// Prints a markdown section for docs/benchmarks.md. Loopback only, bounded in count and time.
import { loadModel, makeModel, selectBackend, generate } from '@trainyard/engine';
import OpenAI from 'openai';
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
  },
});
const preset = values.preset as 'smollm2-135m' | 'tiny';
const TOKENS = Number(values.tokens);
// Inference worker processes: wasm runs one thread, so one worker per core uses the machine.
const WORKERS = Number(values.workers);

async function streamOnce(client: OpenAI, model: string, extra: Record<string, unknown> = {}) {
  const started = performance.now();
  let firstToken = 0;
  let tokens = 0;
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
    if (!firstToken && chunk.choices[0]?.delta?.content) firstToken = performance.now() - started;
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  return { ms: performance.now() - started, ttft: firstToken, tokens };
}

async function main() {
  const stack = await Stack.start({ env: { MAX_BATCH_SEQUENCES: '8', MAX_COMPLETION_TOKENS: '4096', LOG_LEVEL: 'warn' } });
  try {
    for (let w = 1; w < WORKERS; w++) await stack.startReplica('inference-worker');
    const id = `bench/${preset}`;
    makeModel({ preset, out: join(stack.modelsDir, id), seed: 1 });
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('bench')).key, maxRetries: 0, timeout: 600_000 });
    // Load the model on every worker: concurrent requests reach all of them, since a worker
    // takes no more work while it loads. A cold worker would slow the single-stream figure.
    await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id)));

    const single = [];
    for (let i = 0; i < 3; i++) single.push(await streamOnce(client, id));
    const singleRate = median(single.map((r) => (r.tokens / r.ms) * 1000));
    const ttft = median(single.map((r) => r.ttft));

    const concurrentRuns = [];
    for (let i = 0; i < 2; i++) {
      const started = performance.now();
      const runs = await Promise.all(Array.from({ length: 8 }, () => streamOnce(client, id)));
      concurrentRuns.push((runs.reduce((s, r) => s + r.tokens, 0) / (performance.now() - started)) * 1000);
    }
    const concurrentRate = median(concurrentRuns);

    // JSON mode against plain decoding, both after the first token (prefill is the same work).
    // The schema asks for a long array, so that a random-weights model writes TOKENS tokens
    // of JSON instead of closing "{}" at once.
    const decodeRate = (r: { ms: number; ttft: number; tokens: number }) => ((r.tokens - 1) / (r.ms - r.ttft)) * 1000;
    const longJson = {
      type: 'json_schema',
      json_schema: { name: 'long', schema: { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: TOKENS } }, required: ['items'] } },
    };
    const json = [];
    for (let i = 0; i < 3; i++) json.push(await streamOnce(client, id, { response_format: longJson }));
    const jsonRate = median(json.map(decodeRate));
    const plainDecodeRate = median(single.map(decodeRate));

    // Overhead: a one-token request through the stack against the same work done by the
    // engine in this process (chat template, tokenizing, prefill, one sample).
    await selectBackend('wasm');
    const lm = await loadModel(join(stack.modelsDir, id));
    const render = () => lm.tokenizer.encode(lm.chatTemplate?.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }) ?? 'hi');
    const direct: number[] = [];
    const through: number[] = [];
    for (let i = 0; i < 30; i++) {
      let t = performance.now();
      await generate(lm, render(), { maxTokens: 1, temperature: 0 });
      direct.push(performance.now() - t);
      t = performance.now();
      await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1, temperature: 0 });
      through.push(performance.now() - t);
    }
    lm.dispose();

    const cpu = cpus()[0]?.model ?? 'unknown';
    console.log(`## Chat completions through the stack (${preset})

Measured by \`npx tsx --tsconfig tsconfig.base.json tools/bench/chat-completions.bench.ts --preset ${preset} --workers ${WORKERS}\` on ${new Date().toISOString().slice(0, 10)}:
${cpu}, ${cpus().length} cores, Node ${process.version}, wasm backend, ${WORKERS === 1 ? 'one inference worker (MAX_BATCH_SEQUENCES 8)' : `${WORKERS} inference workers (MAX_BATCH_SEQUENCES 8 each)`},
${TOKENS}-token greedy completions streamed with the official openai client over loopback.

| figure | measured | target |
|---|---|---|
| single-stream decode | ${singleRate.toFixed(1)} tokens/s | |
| aggregate decode, 8 concurrent streams | ${concurrentRate.toFixed(1)} tokens/s (${(concurrentRate / singleRate).toFixed(2)}x single) | ≥ 4x single |
| time to first token, concurrency 1 (median of 3) | ${ttft.toFixed(0)} ms | reported |
| decode after the first token, plain | ${plainDecodeRate.toFixed(1)} tokens/s | |
| decode after the first token, JSON mode (json_schema, ${TOKENS}-item array) | ${jsonRate.toFixed(1)} tokens/s (${((1 - jsonRate / plainDecodeRate) * 100).toFixed(1)}% slower) | ≤ 15% slower |
| one-token request through the stack (median of 30) | ${median(through).toFixed(1)} ms | |
| same work in-process (median of 30) | ${median(direct).toFixed(1)} ms | |
| gateway + NATS + scheduling overhead (difference of medians) | ${(median(through) - median(direct)).toFixed(1)} ms | < 5 ms |
`);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
