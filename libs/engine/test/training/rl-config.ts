import type { RLTrainingConfig } from '../../src/training/training-config';

/**
 * RL steps' settings as ART's experimental_config defaults them (libs/art): cispo, its clip
 * range 1 - 1 to 1 + 4, importance sampling per token against the sampling logprobs, no KL
 * penalty. The engine has no defaults of its own.
 */
export const CISPO: RLTrainingConfig = {
  lossFn: 'cispo',
  epsilon: 1,
  epsilonHigh: 4,
  importanceSamplingLevel: 'token',
  maxNegativeAdvantageImportanceSamplingWeight: null,
  maskProbRatio: false,
  kimiK2Tau: null,
  klPenaltyCoef: 0,
  klPenaltySource: 'current_learner',
  truncatedImportanceSampling: null,
  precalculateLogprobs: false,
  logprobCalculationChunkSize: 1024,
};

/** ppo with ART's clip range for it, 1 - 0.2 to 1 + 0.2. */
export const PPO: Pick<RLTrainingConfig, 'lossFn' | 'epsilon' | 'epsilonHigh'> = { lossFn: 'ppo', epsilon: 0.2, epsilonHigh: 0.2 };

/** CISPO with `changes`. */
export function rlConfig(changes: Partial<RLTrainingConfig> = {}): RLTrainingConfig {
  return { ...CISPO, ...changes };
}
