import { DecodeBatch } from '../src/decode-batch';
import { setDecodeBlock } from '../src/kernels/decode-block';
import type { LoadedModel } from '../src/loader';
import { createRng, sampleToken } from '../src/sampling';
import { median } from './weight-variants';

/** The benches' decoding: random prompts of this many tokens. */
const PROMPT_TOKENS = 24;

/**
 * Aggregate tokens/s decoding `size` sequences greedily for `steps` tokens each after random
 * 24-token prompts, sampling included. `route`, where given, runs before each prompt joins
 * (with that sequence's id) and before each step (with the batch's ids, in row order): where
 * a LoraRouter is told which checkpoint each row uses.
 */
export async function greedyDecodeRate(lm: LoadedModel, size: number, steps: number, seed: number, route?: (ids: readonly number[]) => void): Promise<number> {
  const rng = createRng(seed);
  const prompt = () => Array.from({ length: PROMPT_TOKENS }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let i = 0; i < size; i++) {
    route?.([i]);
    next.set(i, sampleToken(await batch.join(i, prompt()), { temperature: 0 }, rng).id);
  }
  const t0 = performance.now();
  for (let s = 0; s < steps; s++) {
    route?.(batch.ids);
    for (const [i, logits] of await batch.step(next)) next.set(i, sampleToken(logits, { temperature: 0 }, rng).id);
  }
  const rate = (size * steps * 1000) / (performance.now() - t0);
  batch.dispose();
  return rate;
}

/**
 * Each case's rate with every block in one call and as tfjs ops (setDecodeBlock), after one
 * warm-up: the two take turns, round after round, the first of each pair alternating, so
 * that a machine drifting over the run moves both alike.
 */
export async function alternateOneCall<C>(cases: C[], rounds: number, rate: (c: C, seed: number) => Promise<number>): Promise<{ oneCall: number[]; ops: number[] }[]> {
  const rates = cases.map(() => ({ oneCall: [] as number[], ops: [] as number[] }));
  for (const c of cases) await rate(c, 0);
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cases.entries()) {
      for (const oneCall of round % 2 ? [true, false] : [false, true]) {
        setDecodeBlock(oneCall);
        (oneCall ? rates[i].oneCall : rates[i].ops).push(await rate(c, round + 1));
      }
    }
  }
  setDecodeBlock(true);
  return rates;
}

/** A table cell: the median and the range, in tokens/s. */
export function rateRange(r: number[]): string {
  return `${median(r).toFixed(1)} (${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)})`;
}
