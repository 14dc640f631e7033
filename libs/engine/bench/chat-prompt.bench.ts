/**
 * What counting a prompt costs the chat service before it queues a completion: ChatPrompt read
 * from a model directory without the weights (readChatPrompt), then the chat template rendered
 * and the text tokenized (ChatPrompt.encode), as for every request. Models made by the model
 * maker: tiny (a 512-token vocabulary) and the SmolLM2-135M tokenizer's size (49152 tokens;
 * one small layer, since only the tokenizer and template are read).
 *
 *   npx tsx libs/engine/bench/chat-prompt.bench.ts
 *
 * Prints a markdown table: per model, the first read of its files and the median time to count
 * three prompts (one short message; the same with one tool; about 2000 tokens).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChatMessage, ToolDefinition } from '../src/chat-template';
import { makeModel } from '../src/maker/make-model';
import { readChatPrompt } from '../src/prompt';

const RUNS = 1000;
const TOOLS: ToolDefinition[] = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];
const PROMPTS: [string, ChatMessage[], ToolDefinition[] | null][] = [
  ['one short message', [{ role: 'user', content: 'Say something.' }], null],
  ['the same, with one tool', [{ role: 'user', content: 'Say something.' }], TOOLS],
  ['a long message', [{ role: 'user', content: 'The train yard is busy today. '.repeat(170) }], null],
];

function median(run: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    run();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)];
}

function main(): void {
  const models = [
    { name: 'tiny', dir: makeModel({ preset: 'tiny', out: path.join(os.tmpdir(), 'trainyard-prompt-bench-tiny'), seed: 1 }).dir },
    {
      name: 'smollm2-135m tokenizer',
      dir: makeModel({
        preset: 'smollm2-135m',
        out: path.join(os.tmpdir(), 'trainyard-prompt-bench-smollm2'),
        seed: 1,
        overrides: { hiddenSize: 64, intermediateSize: 64, numLayers: 1, numHeads: 1, numKvHeads: 1, headDim: 64 },
      }).dir,
    },
  ];
  console.log('| model | first read | prompt | tokens | median to count |');
  console.log('|---|---|---|---|---|');
  for (const model of models) {
    const started = performance.now();
    const prompt = readChatPrompt(model.dir);
    const readMs = performance.now() - started;
    for (let i = 0; i < RUNS; i++) prompt.encode(PROMPTS[0][1]); // warm-up
    for (const [label, messages, tools] of PROMPTS) {
      const tokens = prompt.encode(messages, tools).length;
      const ms = median(() => prompt.encode(messages, tools));
      console.log(`| ${model.name} | ${readMs.toFixed(0)} ms | ${label} | ${tokens} | ${ms.toFixed(3)} ms |`);
    }
  }
}

main();
