// What a forced tool call costs per generated token through the whole stack, against free
// decoding of the same number of tokens from the same prompt (the tool described, tool_choice
// "none"), with the official openai client on this machine.
//
//   npx tsx --tsconfig tsconfig.base.json tools/bench/tool-calls.bench.ts [--preset smollm2-135m|tiny] [--tokens 64] [--pairs 8]
//
// Both are streamed and timed from their first chunk (sent before the prefill) to their
// last; each request repeats its predecessor's prompt, so the inference worker's prompt
// cache leaves almost no prefill to time. Alternating pairs, with and without logprobs (either way
// a drawn token the grammar accepts is kept unmasked: the service reports the model's own
// logprobs, as ART's rollouts ask, which the draw gives). The call is forced (tool_choice naming the function) and its argument is an
// array of at least tokens / 8 integers (the markup takes the rest), so that a random-weights model keeps writing the call
// to the end of the budget, where the decoder works at closing it in time; every call is
// checked to parse. Greedy decoding, one worker, loopback only, bounded in count and time.
//
// Prints a markdown table for docs/benchmarks.md.
import { makeModel } from '@trainyard/engine';
import OpenAI from 'openai';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Stack } from '../../tests/e2e/src/support/stack';
import { median, runBenchmark } from './bench-support';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'smollm2-135m' },
    tokens: { type: 'string', default: '64' },
    pairs: { type: 'string', default: '8' },
  },
});
const preset = values.preset as 'smollm2-135m' | 'tiny';
const TOKENS = Number(values.tokens);
const PAIRS = Number(values.pairs);

const TOOL: OpenAI.Chat.ChatCompletionFunctionTool = {
  type: 'function',
  function: {
    name: 'record',
    parameters: { type: 'object', properties: { values: { type: 'array', items: { type: 'integer' }, minItems: TOKENS / 8 } }, required: ['values'] },
  },
};

interface Run {
  /** Tokens per second from the first chunk to the last. */
  rate: number;
  tokens: number;
  /** Prompt tokens reused from the worker's prompt cache, of all the prompt's tokens. */
  cached: number;
  prompt: number;
}

async function streamOnce(client: OpenAI, model: string, logprobs: boolean, tool: boolean): Promise<Run> {
  let first = 0;
  let tokens = 0;
  let cached = 0;
  let prompt = 0;
  let args = '';
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Tell me a long story about a train yard.' }],
    max_tokens: TOKENS,
    temperature: 0,
    logprobs,
    stream: true,
    stream_options: { include_usage: true },
    // The same prompt both ways (the template describes the tool); only the call is forced.
    tools: [TOOL],
    tool_choice: tool ? { type: 'function', function: { name: 'record' } } : 'none',
  });
  for await (const chunk of stream) {
    if (!first) first = performance.now();
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) args += call.function?.arguments ?? '';
    if (chunk.usage) {
      tokens = chunk.usage.completion_tokens;
      prompt = chunk.usage.prompt_tokens;
      cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
    }
  }
  if (tool) JSON.parse(args); // what a forced call promises, even at the end of its budget
  return { rate: (tokens / (performance.now() - first)) * 1000, tokens, cached, prompt };
}

async function main() {
  const stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '4096', LOG_LEVEL: 'warn' } });
  try {
    const id = `bench/${preset}`;
    makeModel({ preset, out: join(stack.modelsDir, id), seed: 1 });
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('bench')).key, maxRetries: 0, timeout: 600_000 });
    // Load the model and compile the call's grammar before anything is timed.
    await streamOnce(client, id, true, true);
    await streamOnce(client, id, false, false);

    const rows: string[] = [];
    for (const logprobs of [true, false]) {
      const free: Run[] = [];
      const forced: Run[] = [];
      for (let pair = 0; pair < PAIRS; pair++) {
        free.push(await streamOnce(client, id, logprobs, false));
        forced.push(await streamOnce(client, id, logprobs, true));
      }
      const freeRate = median(free.map((r) => r.rate));
      const forcedRate = median(forced.map((r) => r.rate));
      const slower = ((freeRate / forcedRate - 1) * 100).toFixed(1);
      const uncached = (runs: Run[]) => median(runs.map((r) => r.prompt - r.cached));
      rows.push(
        `| ${preset} | ${logprobs ? 'yes' : 'no'} | ${median(free.map((r) => r.tokens))} / ${median(forced.map((r) => r.tokens))} | ${uncached(free)} / ${uncached(forced)} | ${freeRate.toFixed(1)} | ${forcedRate.toFixed(1)} | ${slower} % |`,
      );
    }
    console.log(`Forced tool call against free decoding, ${TOKENS} tokens, greedy, one inference worker, ${PAIRS} alternating pairs (medians)`);
    console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`);
    console.log('| model | logprobs | tokens (free / call) | prompt tokens prefilled (free / call) | free, tokens/s | forced call, tokens/s | call slower by |\n|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
  } finally {
    await stack.stop();
  }
}

runBenchmark(main);
