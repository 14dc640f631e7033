/**
 * What JSON mode costs per token in the engine alone: 64 greedy tokens with and without the
 * constrained decoder, on a model made by the model maker (tiny by default, whose decode
 * step is short enough for the grammar's own work to show). The schema asks for an array of
 * at least 16 integers, so that a random-weights model keeps writing JSON to the end of the
 * budget, where the decoder works at closing the text in time (as in
 * tools/bench/chat-completions.bench.ts); every output is checked to parse.
 *
 *   npx tsx libs/engine/bench/json-mode.bench.ts [tiny|smollm2-135m]
 *
 * Prints a markdown table: plain and JSON ms per token (medians of alternating runs), with the
 * model's own logprobs, as the inference worker reports them, and without logprobs (either
 * way a drawn token the grammar allows needs no mask: sampling.ts, drawsBeforeProcessing).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { generate } from '../src/generate';
import { GrammarSpec, JsonGrammarCompiler } from '../src/grammar';
import { loadModel } from '../src/loader';
import { makeModel } from '../src/maker/make-model';

const TOKENS = 64;
const RUNS = 5;

async function main(): Promise<void> {
  const preset = (process.argv[2] ?? 'tiny') as 'tiny' | 'smollm2-135m';
  await selectBackend('wasm');
  const dir = path.join(os.tmpdir(), `trainyard-json-bench-${preset}`);
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset, out: dir, seed: 1 });
  const lm = await loadModel(dir, { inferenceOnly: true });
  const compiler = await JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
  const spec: GrammarSpec = {
    kind: 'schema',
    schema: { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: TOKENS / 4 } }, required: ['items'] },
    strict: true,
  };
  const template = lm.chatTemplate;
  if (!template) throw new Error(`${dir} has no chat template`);
  const prompt = lm.tokenizer.encode(template.render([{ role: 'user', content: 'Tell me a long story about a train yard.' }], { addGenerationPrompt: true }));

  // As the inference worker runs a request: with the model's own logprobs, or without; a
  // drawn token the grammar allows is kept as it is, the vocabulary masked only otherwise.
  const msPerToken = async (json: boolean, logprobs: boolean): Promise<number> => {
    const grammar = json ? await compiler.compile(spec) : null;
    const matcher = grammar?.newMatcher(TOKENS);
    const started = performance.now();
    const result = await generate(lm, prompt, {
      maxTokens: TOKENS,
      temperature: 0,
      logprobs,
      modelLogprobs: true,
      logitsProcessor: matcher?.logitsProcessor(),
      quickCheck: matcher?.quickCheck(),
    });
    const ms = performance.now() - started;
    matcher?.dispose();
    if (json) JSON.parse(result.text); // what JSON mode promises, even cut short by the budget
    return ms / result.tokens.length;
  };
  await msPerToken(true, true); // compile and warm up
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`| model | logprobs | plain, ms per token | JSON mode, ms per token | JSON's own cost per token |\n|---|---|---|---|---|`);
  for (const logprobs of [true, false]) {
    const plain: number[] = [];
    const json: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await msPerToken(false, logprobs));
      json.push(await msPerToken(true, logprobs));
    }
    console.log(`| ${preset} | ${logprobs ? 'yes' : 'no'} | ${median(plain).toFixed(2)} | ${median(json).toFixed(2)} | ${(median(json) - median(plain)).toFixed(2)} ms |`);
  }
  lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
