import type { RlJobPlan } from './rl-plan';

/**
 * Why an RL plan holds no gradient step, in words a user can act on; null when it holds some.
 * The plan skips groups whose rewards are all equal (no advantage) and histories with no
 * sampled Choice tokens (nothing to train), so those are the two reasons a job can end empty.
 */
export function rlNoStepsReason(plan: Pick<RlJobPlan, 'numSequences' | 'numGroupsSubmitted' | 'numGroupsTrainable'>): string | null {
  if (plan.numSequences > 0) return null;
  if (plan.numGroupsSubmitted === 0) return 'No trajectory groups were submitted.';
  if (plan.numGroupsTrainable === 0) {
    return (
      `Every group had equal rewards (or a single trajectory), so no trajectory had an advantage: ` +
      `0 of ${plan.numGroupsSubmitted} groups were trainable. Vary the rollouts or the reward so a group's rewards differ.`
    );
  }
  return (
    `No trainable tokens: the trajectories with an advantage in ${plan.numGroupsTrainable} of ${plan.numGroupsSubmitted} groups ` +
    'held no Choice with sampled token ids (send chat completions as Choice objects, with their logprobs).'
  );
}

/** SFT makes one gradient step per batch of conversations: none when the dataset is empty. */
export function sftNoStepsReason(numSequences: number): string | null {
  return numSequences > 0 ? null : 'The dataset held no conversations to train on.';
}
