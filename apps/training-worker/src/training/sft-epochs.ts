import { SeededRandom, SftTrainingConfig } from '@trainyard/engine';

/**
 * The conversations each epoch trains on, in order. Without a seed every epoch takes them in
 * file order (ART's SFT jobs: one epoch, as sent); with one, each epoch takes its own
 * permutation, drawn from the seed, so the same seed and data give the same batches.
 */
export function sftEpochs<T>(conversations: readonly T[], epochs: number, seed: number | undefined): T[][] {
  const random = seed === undefined ? undefined : new SeededRandom(seed);
  return Array.from({ length: Math.max(1, epochs) }, () => (random ? shuffled(conversations, random) : [...conversations]));
}

/** One epoch's config: a learning rate given per batch is cut to that epoch's batches. */
export function epochConfig(config: SftTrainingConfig, firstBatch: number, batches: number): SftTrainingConfig {
  return Array.isArray(config.learningRate) ? { ...config, learningRate: config.learningRate.slice(firstBatch, firstBatch + batches) } : config;
}

/** Fisher-Yates. */
function shuffled<T>(items: readonly T[], random: SeededRandom): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
