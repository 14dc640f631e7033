import type { RLLossOptions } from './rl-loss';

/**
 * The trainer's settings, complete: the engine has no defaults of its own for them. A
 * service fills them from its API's request (the training orchestrator from ART's
 * experimental_config, libs/art) before the job reaches a worker.
 */

/** An RL job: the policy loss (RLLossOptions), the advantages, the logprobs it trains against and the packing of its steps. */
export interface RLTrainingConfig extends RLLossOptions {
  learningRate: number;
  /** Divide each group's centred rewards by their standard deviation (groupAdvantages). */
  scaleRewards: boolean;
  /** In [-1, 1]: weights the positive advantages against the negative ones (groupAdvantages). */
  advantageBalance: number;
  /** Recompute the old logprobs with the current policy before the first update, instead of the sampling ones. */
  precalculateLogprobs: boolean;
  /** Train on Choices without sampling logprobs (their old logprob is the current policy's); otherwise planRl refuses them. */
  allowTrainingWithoutLogprobs: boolean;
  /** Token budget of one gradient step (rows x padded length). */
  packedSequenceLength: number;
  /** Positions of the lm_head's softmax computed at once. */
  logprobCalculationChunkSize: number;
  /** The learning rate is multiplied by num_trajectories to this power. */
  numTrajectoriesLearningRateMultiplierPower: number;
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
