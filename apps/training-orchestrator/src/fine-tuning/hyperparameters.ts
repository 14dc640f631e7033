import { validateSftConfig } from '@trainyard/art';
import type { FineTuningHyperparameters, FineTuningHyperparametersInput, TrainingSftSettings } from '@trainyard/contracts';

/** "auto" batch size: 8 conversations a step, at most the file's (the engine's own "auto" for SFT jobs). */
const AUTO_BATCH_SIZE = 8;

/**
 * "auto" epochs as OpenAI's fine-tuning cookbook describes them: 3 passes, raised for a small
 * file so that about 100 examples are seen (at most 25 passes), lowered for a large one so
 * that about 25,000 are (at least 1).
 */
const TARGET_EPOCHS = 3;
const MIN_TARGET_EXAMPLES = 100;
const MAX_TARGET_EXAMPLES = 25_000;
const MAX_AUTO_EPOCHS = 25;

/** The SFT learning rate the engine takes by default: learning_rate_multiplier scales it. */
export const BASE_LEARNING_RATE = validateSftConfig(null).config.learningRate as number;

export function autoEpochs(examples: number): number {
  if (examples * TARGET_EPOCHS < MIN_TARGET_EXAMPLES) return Math.min(MAX_AUTO_EPOCHS, Math.floor(MIN_TARGET_EXAMPLES / examples));
  if (examples * TARGET_EPOCHS > MAX_TARGET_EXAMPLES) return Math.max(1, Math.floor(MAX_TARGET_EXAMPLES / examples));
  return TARGET_EPOCHS;
}

/** Every "auto" (or absent) hyperparameter made a value for a training file of `examples` conversations. */
export function resolveHyperparameters(input: FineTuningHyperparametersInput, examples: number): FineTuningHyperparameters {
  const given = <T>(value: T | 'auto' | undefined): T | undefined => (value === 'auto' ? undefined : value);
  return {
    n_epochs: given(input.n_epochs) ?? autoEpochs(examples),
    batch_size: given(input.batch_size) ?? Math.max(1, Math.min(AUTO_BATCH_SIZE, examples)),
    learning_rate_multiplier: given(input.learning_rate_multiplier) ?? 1,
  };
}

/** The SFT settings a fine-tuning job trains with (epochs and order travel beside them in the payload). */
export function sftSettings(hyperparameters: FineTuningHyperparameters): TrainingSftSettings {
  return { batchSize: hyperparameters.batch_size, learningRate: BASE_LEARNING_RATE * hyperparameters.learning_rate_multiplier, assistantTurns: 'all' };
}
