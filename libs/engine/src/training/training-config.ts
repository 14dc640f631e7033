import type { RLLossOptions } from './rl-loss';

/**
 * The trainer's settings, complete: the engine has no defaults of its own for them. A
 * service fills them from its API's request (the training orchestrator from ART's
 * experimental_config, libs/art) before the job reaches a worker.
 */

/** RL's gradient steps: the policy loss (RLLossOptions) and the logprobs it trains against. */
export interface RLTrainingConfig extends RLLossOptions {
  /** Recompute the old logprobs with the current policy before the first update, instead of the sampling ones. */
  precalculateLogprobs: boolean;
  /** Positions of the lm_head's softmax computed at once. */
  logprobCalculationChunkSize: number;
}

/** Which assistant turns of an SFT conversation carry loss. */
export type SftAssistantTurns = 'all' | 'last';

/** An SFT job: conversations per gradient step, the learning rate (one per step when a list), the turns trained. */
export interface SftTrainingConfig {
  batchSize: number | 'auto';
  learningRate: number | number[];
  assistantTurns: SftAssistantTurns;
}

/** Conversations per step when batchSize is 'auto' (fewer when there are fewer). */
export const AUTO_SFT_BATCH_SIZE = 8;
