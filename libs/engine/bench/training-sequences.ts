/**
 * The token sequences the training benches step on (train.bench.ts, train-threads.bench.ts,
 * train-profile.bench.ts): random ids in [3, vocab) from one linear congruential generator
 * seeded at 1, so that every bench and every process draws the same sequences in the same order.
 */
export interface TrainingSequence {
  tokens: number[];
  /** 0 for the first `context` tokens (no loss), 1 after. */
  mask: number[];
}

/** A source of sequences over `vocabSize` ids: each call draws `length` tokens, the first `context` of them masked. */
export function trainingSequences(vocabSize: number): (length: number, context: number) => TrainingSequence {
  let seed = 1;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return (length, context) => {
    const tokens = Array.from({ length }, () => 3 + Math.floor(random() * (vocabSize - 3)));
    return { tokens, mask: tokens.map((_, i) => (i < context ? 0 : 1)) };
  };
}
