import { artTrajectoryPath } from '@trainyard/art';
import type { TrainingRlSettings, TrainingTrajectoryGroup } from '@trainyard/contracts';
import { buildRlSequence, ModelConfig, packRlSteps, RLPlan, RLPlanItem, RLSequence, StepMetrics, Tokenizing, untrainableTokens } from '@trainyard/engine';

/**
 * An RL job's trajectory groups planned into what the engine's trainer takes (RLPlan: token
 * sequences with their masks, sampling logprobs and advantages, packed into gradient steps),
 * with what the job reports about its groups.
 */
export interface RlJobPlan extends RLPlan {
  /** Gradient steps: steps.length (ART's num_sequences). */
  numSequences: number;
  numGroupsSubmitted: number;
  numGroupsTrainable: number;
  numTrajectories: number;
  /** Mean reward over every submitted trajectory. */
  reward: number;
  /** Mean over groups of the population std of their rewards. */
  rewardStdDev: number;
}

/** The model a job is planned for: its tokenizer and chat template, its positions and vocabulary. */
export type PlanningModel = Tokenizing & { config: Pick<ModelConfig, 'maxPositionEmbeddings' | 'vocabSize'> };

/**
 * Plans an RL job as ART trains one: advantages per group (groupAdvantages), groups whose rewards
 * are all equal skipped, trajectories with zero advantage left out, each history (the
 * trajectory's own and its additional ones, with the trajectory's advantage) tokenized through
 * the model's chat template (buildRlSequence), histories with no sampled token left out, then
 * packed into gradient steps of at most packedSequenceLength tokens. The learning rate is
 * learning_rate x num_trajectories ^ num_trajectories_learning_rate_multiplier_power. A history
 * the trainer cannot train (its chat template fails, it is too long, a token is outside the
 * vocabulary, or it lacks logprobs where they are needed) fails the plan, named by its place in
 * the job's request (trajectory_groups[g].trajectories[t]...), as the orchestrator names the
 * problems it finds before queueing.
 */
export function planRlJob(lm: PlanningModel, groups: TrainingTrajectoryGroup[], settings: TrainingRlSettings): RlJobPlan {
  const items: RLPlanItem[] = [];
  let rewardSum = 0;
  let stdSum = 0;
  let numTrajectories = 0;
  let trainableGroups = 0;
  const needLogprobs = !settings.allowTrainingWithoutLogprobs && !settings.precalculateLogprobs;
  groups.forEach((group, g) => {
    const rewards = group.trajectories.map((t) => t.reward);
    numTrajectories += rewards.length;
    rewardSum += rewards.reduce((a, b) => a + b, 0);
    const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(rewards.length, 1);
    stdSum += Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / Math.max(rewards.length, 1));
    if (rewards.length < 2 || rewards.every((r) => r === rewards[0])) return;
    trainableGroups++;
    const advantages = groupAdvantages(rewards, settings);
    group.trajectories.forEach((trajectory, t) => {
      if (advantages[t] === 0) return;
      for (const [h, history] of [trajectory, ...(trajectory.additionalHistories ?? [])].entries()) {
        const refuse = (reason: string) => new Error(`${artTrajectoryPath(g, t, h)}: ${reason}`);
        let sequence: RLSequence;
        try {
          sequence = buildRlSequence(lm, history);
        } catch (err) {
          throw refuse((err as Error).message);
        }
        if (!sequence.mask.includes(1)) continue;
        const problem = untrainableTokens(lm.config, sequence.tokens);
        if (problem) throw refuse(problem);
        if (needLogprobs && sequence.mask.some((m, i) => m === 1 && sequence.logprobs[i] === null)) {
          throw refuse('a Choice has no sampling logprobs (allowTrainingWithoutLogprobs or precalculateLogprobs would train it)');
        }
        items.push({ sequence, advantage: advantages[t] });
      }
    });
  });
  const steps = packRlSteps(items, settings.packedSequenceLength);
  return {
    steps,
    learningRate: settings.learningRate * Math.pow(Math.max(numTrajectories, 1), settings.numTrajectoriesLearningRateMultiplierPower),
    numSequences: steps.length,
    numGroupsSubmitted: groups.length,
    numGroupsTrainable: trainableGroups,
    numTrajectories,
    reward: rewardSum / Math.max(numTrajectories, 1),
    rewardStdDev: stdSum / Math.max(groups.length, 1),
  };
}

/** What every gradient step of the job reports about its groups, beside the trainer's own metrics. */
export function rlJobMetrics(plan: RlJobPlan): StepMetrics {
  return {
    reward: plan.reward,
    reward_std_dev: plan.rewardStdDev,
    num_trajectories: plan.numTrajectories,
    num_groups_submitted: plan.numGroupsSubmitted,
    num_groups_trainable: plan.numGroupsTrainable,
  };
}

/**
 * Group-relative advantages: A_i = r_i - mean, divided by (population std + 1e-6) when
 * scaleRewards; then advantage_balance b > 0 scales negative advantages by (1 - b), b < 0
 * scales positive ones by (1 + b).
 */
export function groupAdvantages(rewards: number[], options: Pick<TrainingRlSettings, 'scaleRewards' | 'advantageBalance'>): number[] {
  if (rewards.length === 0) return [];
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
  const b = options.advantageBalance;
  return rewards.map((r) => {
    let a = r - mean;
    if (options.scaleRewards) a /= std + 1e-6;
    if (b > 0 && a < 0) a *= 1 - b;
    if (b < 0 && a > 0) a *= 1 + b;
    return a;
  });
}
