import type { ModelConfig } from '../config';
import type { RLSequence } from './sequences';

/**
 * What RL training takes, in the engine's own terms: token sequences, each with the mask of the
 * tokens it trains (a Choice's sampled tokens), their sampling logprobs and the sequence's
 * advantage, gathered into gradient steps. Where the sequences and the advantages come from
 * (the rewards of trajectory groups, a chat template) is the caller's business: the training
 * worker plans an ART job's groups into them (apps/training-worker, training/rl-plan.ts).
 */

/** One sequence the policy loss trains on: its tokens, mask and sampling logprobs, and its advantage. */
export interface RLPlanItem {
  sequence: RLSequence;
  advantage: number;
}

/** What LoraTrainer.trainRl trains: one gradient step per entry of `steps`, each at `learningRate`. */
export interface RLPlan {
  steps: RLPlanItem[][];
  learningRate: number;
}

/**
 * The items, in their order, packed into gradient steps of at most `tokenBudget` tokens (rows x
 * the longest row's length, as the rows are padded); an item longer than the budget gets a step
 * of its own.
 */
export function packRlSteps(items: RLPlanItem[], tokenBudget: number): RLPlanItem[][] {
  const steps: RLPlanItem[][] = [];
  let current: RLPlanItem[] = [];
  let longest = 0;
  for (const item of items) {
    const length = item.sequence.tokens.length;
    const widened = Math.max(longest, length) * (current.length + 1);
    if (current.length > 0 && widened > tokenBudget) {
      steps.push(current);
      current = [];
      longest = 0;
    }
    current.push(item);
    longest = Math.max(longest, length);
  }
  if (current.length > 0) steps.push(current);
  return steps;
}

/**
 * Why the model cannot train on `tokens` (more of them than its positions, or an id outside its
 * vocabulary); null when it can.
 */
export function untrainableTokens(config: Pick<ModelConfig, 'maxPositionEmbeddings' | 'vocabSize'>, tokens: number[]): string | null {
  if (tokens.length > config.maxPositionEmbeddings) return `${tokens.length} tokens exceed the model's ${config.maxPositionEmbeddings} positions`;
  const bad = tokens.find((id) => !(Number.isInteger(id) && id >= 0 && id < config.vocabSize));
  return bad === undefined ? null : `token id ${bad} is outside the vocabulary`;
}
