import type { TrainingJobRecord } from '@trainyard/contracts';
import { waitForJobEnd } from './faults';
import type { Stack } from './stack';

export interface RewardedGroup {
  trajectories: { reward: number }[];
}

export interface RlRounds {
  /** The trainable model's id, and its name for chat completions without a step. */
  model: { id: string; name: string };
  /** Fresh rollouts from `model` (a name with its step), round `round`. */
  rollouts(model: string, round: number): Promise<RewardedGroup[]>;
  learningRate: number;
  maxJobs: number;
  /** Stop early once a round's mean reward reaches it. */
  target: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * RL as ART runs it through the HTTP API: rollouts from the newest step, one RL job on them,
 * fresh rollouts from the step it made, until the target or the last job. Every job must
 * succeed. Returns the mean reward of each round's rollouts, the first from step 0.
 */
export async function trainInRounds(stack: Stack, key: string, rounds: RlRounds): Promise<number[]> {
  const rewards: number[] = [];
  const meanReward = (groups: RewardedGroup[]) => mean(groups.flatMap((g) => g.trajectories.map((t) => t.reward)));
  let groups = await rounds.rollouts(`${rounds.model.name}:step0`, 0);
  rewards.push(meanReward(groups));
  for (let job = 1; job <= rounds.maxJobs && rewards[rewards.length - 1] < rounds.target; job++) {
    const { id } = await stack.json<{ id: string }>('POST', '/v1/preview/training-jobs', key, {
      model_id: rounds.model.id,
      trajectory_groups: groups,
      experimental_config: { learning_rate: rounds.learningRate },
    });
    const ended: TrainingJobRecord = await waitForJobEnd(stack, key, id);
    if (ended.status !== 'succeeded') throw new Error(`RL job ${id} ended ${ended.status}: ${ended.error_message}`);
    groups = await rounds.rollouts(`${rounds.model.name}:step${job}`, job);
    rewards.push(meanReward(groups));
  }
  // Seen in the logs of a failing run: the whole curve, not just its ends.
  console.log(`mean reward per round: ${rewards.map((r) => r.toFixed(3)).join(', ')}`);
  return rewards;
}
