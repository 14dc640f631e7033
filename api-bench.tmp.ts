import { makeModel } from './libs/engine/src/files';
import { readChatPrompt } from './libs/engine/src/prompt';
const preset = process.argv[2] as 'tiny' | 'smollm2-135m';
const overrides = preset === 'tiny' ? {} : { hiddenSize: 64, intermediateSize: 64, numLayers: 1, numHeads: 1, numKvHeads: 1, headDim: 64 };
const dir = makeModel({ preset, out: `/tmp/api-bench-${preset}`, seed: 1, overrides }).dir;
(globalThis as { gc?: () => void }).gc?.();
const before = process.memoryUsage();
const t0 = performance.now();
const prompt = readChatPrompt(dir);
const readMs = performance.now() - t0;
(globalThis as { gc?: () => void }).gc?.();
const after = process.memoryUsage();
const messages = [{ role: 'user', content: 'Say something.' }];
const long = [{ role: 'user', content: 'The train yard is busy today. '.repeat(170) }];
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
function median(run: () => void, n: number): number {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) { const s = performance.now(); run(); xs.push(performance.now() - s); }
  xs.sort((a, b) => a - b);
  return xs[Math.floor(n / 2)];
}
for (let i = 0; i < 500; i++) prompt.encode(messages);
console.log(`${preset}: vocab ${prompt.tokenizer.vocabSize}; first read ${readMs.toFixed(1)} ms; heap +${((after.heapUsed - before.heapUsed) / 2 ** 20).toFixed(1)} MiB, rss +${((after.rss - before.rss) / 2 ** 20).toFixed(1)} MiB`);
for (const [name, m, t] of [['short', messages, null], ['short+tool', messages, tools], ['long', long, null]] as const) {
  const ms = median(() => prompt.encode(m as never, t as never), 1000);
  console.log(`  ${name}: ${prompt.encode(m as never, t as never).length} tokens, median ${ms.toFixed(3)} ms`);
}
