/**
 * What turning one row of logits into a token costs, per row and step, for a SmolLM2-sized
 * vocabulary (49152): greedy and sampled, with and without logprobs, with top_p. Every
 * decode step pays it once per sequence in the batch, on top of the forward pass.
 *
 *   npx tsx libs/engine/bench/sampling.bench.ts
 *   VOCAB=151936 npx tsx libs/engine/bench/sampling.bench.ts    (Qwen-sized)
 *
 * The logits are drawn from a normal distribution with standard deviation 3 (a seeded one,
 * the same in every run): a language model's are of that spread, with a few hundred
 * tokens holding most of the mass. Prints a markdown table: the median of 9 rounds of 200
 * calls, each after 100 unmeasured.
 */
import { SeededRandom } from '../src/random';
import { SamplingParams, sampleToken } from '../src/sampling';

const VOCAB = Number(process.env['VOCAB'] ?? 49152);
const ROUNDS = 9;
const CALLS = 200;

const CASES: [string, SamplingParams][] = [
  ['greedy, no logprobs', { temperature: 0, logprobs: false }],
  ['greedy, logprobs', { temperature: 0 }],
  ['greedy, logprobs, top_logprobs 5', { temperature: 0, topLogprobs: 5 }],
  ['temperature 1, no logprobs', { temperature: 1, logprobs: false }],
  ['temperature 1, logprobs (ART rollouts)', { temperature: 1 }],
  ['temperature 1, top_p 0.9, logprobs', { temperature: 1, topP: 0.9 }],
  ['temperature 0.7, top_p 0.95, no logprobs', { temperature: 0.7, topP: 0.95, logprobs: false }],
];

function main(): void {
  const source = new SeededRandom(7);
  const logits = Float32Array.from({ length: VOCAB }, () => 3 * source.normal());
  const rng = new SeededRandom(1);
  console.log(`Sampling one row of ${VOCAB} logits (ms per call, median of ${ROUNDS} rounds of ${CALLS}):\n`);
  console.log('| case | ms per row |\n|---|---|');
  for (const [label, params] of CASES) {
    for (let i = 0; i < 100; i++) sampleToken(logits, params, rng);
    const rounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      for (let i = 0; i < CALLS; i++) sampleToken(logits, params, rng);
      rounds.push((performance.now() - t0) / CALLS);
    }
    rounds.sort((a, b) => a - b);
    console.log(`| ${label} | ${rounds[ROUNDS >> 1].toFixed(3)} |`);
  }
}

main();
