import { validateExperimentalConfig } from '@trainyard/art';
import type { TrainingHistory, TrainingRlSettings, TrainingTrajectory, TrainingTrajectoryGroup } from '@trainyard/contracts';
import { makeModel, readModelConfig, readTokenizerFiles, RLPlanItem } from '@trainyard/engine';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupAdvantages, planRlJob, PlanningModel, rlJobMetrics } from './rl-plan';

const PROMPT = [{ role: 'user', content: 'hi' }];

/** A history of one prompt and one sampled answer; its logprobs -1, -1.1, ... unless given. */
function history(tokenIds: number[], logprobs: (number | null)[] | null = tokenIds.map((_, i) => -1 - i / 10)): TrainingHistory {
  return { messagesAndChoices: [...PROMPT, { choice: { tokenIds, logprobs, message: { role: 'assistant', content: 'x' } } }] };
}

function trajectory(reward: number, tokenIds: number[], additional: TrainingHistory[] = []): TrainingTrajectory {
  return { ...history(tokenIds), reward, ...(additional.length > 0 ? { additionalHistories: additional } : {}) };
}

/** ART's defaults (libs/art) with `changes`. */
function settings(changes: Partial<TrainingRlSettings> = {}): TrainingRlSettings {
  return { ...validateExperimentalConfig({}).config.settings, ...changes };
}

describe('planRlJob (tiny model: its tokenizer and chat template)', () => {
  let dir: string;
  let lm: PlanningModel;
  /** The prompt's tokens as inference sees them: what every sequence starts with. */
  let prompt: number[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'training-worker-rl-plan-'));
    makeModel({ preset: 'tiny', out: join(dir, 'tiny'), seed: 0 });
    lm = { ...readTokenizerFiles(join(dir, 'tiny')), config: await readModelConfig(join(dir, 'tiny')) };
    prompt = lm.tokenizer.encode(lm.chatTemplate!.render(PROMPT, { addGenerationPrompt: true }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Of each planned item: its advantage, the tokens it trains with their logprobs, what comes before them. */
  const trained = (item: RLPlanItem) => {
    const { tokens, mask, logprobs } = item.sequence;
    const first = mask.indexOf(1);
    return {
      advantage: item.advantage,
      tokens: tokens.filter((_, i) => mask[i] === 1),
      logprobs: logprobs.filter((_, i) => mask[i] === 1),
      context: tokens.slice(0, first),
      contextMasked: mask.slice(0, first).every((m) => m === 0),
    };
  };

  it("gives each history its trajectory's advantage and trains exactly its Choice's sampled tokens, with their logprobs", () => {
    // Rewards 1, 0, 0.5: mean 0.5, advantages 0.5, -0.5 and 0 (left out); the second
    // trajectory's additional history trains with its advantage.
    const group = { trajectories: [trajectory(1, [40, 41]), trajectory(0, [42, 43, 44], [history([45])]), trajectory(0.5, [46])] };
    const plan = planRlJob(lm, [group], settings({ scaleRewards: false }));
    expect(plan.steps).toHaveLength(1);
    expect(plan.steps[0].map(trained)).toEqual([
      { advantage: 0.5, tokens: [40, 41], logprobs: [-1, -1.1], context: prompt, contextMasked: true },
      { advantage: -0.5, tokens: [42, 43, 44], logprobs: [-1, -1.1, -1.2], context: prompt, contextMasked: true },
      { advantage: -0.5, tokens: [45], logprobs: [-1], context: prompt, contextMasked: true },
    ]);
    // Scaled by the group's spread (ART's default): std of (1, 0, 0.5) is sqrt(1/6).
    const scaled = planRlJob(lm, [group], settings()).steps[0].map((i) => i.advantage);
    [0.5, -0.5, -0.5].forEach((a, i) => expect(scaled[i]).toBeCloseTo(a / (Math.sqrt(1 / 6) + 1e-6), 6));
  });

  it('skips a group whose rewards are all equal and a history without a Choice, and counts what the job reports', () => {
    const flat = { trajectories: [trajectory(1, [40]), trajectory(1, [41])] };
    const varied = { trajectories: [trajectory(1, [42], [{ messagesAndChoices: PROMPT }]), trajectory(0, [43])] };
    const plan = planRlJob(lm, [flat, varied], settings({ learningRate: 1e-4, numTrajectoriesLearningRateMultiplierPower: 0.5 }));
    expect(plan.steps.flat().map((i) => trained(i).tokens)).toEqual([[42], [43]]);
    expect(plan).toMatchObject({ numSequences: 1, numGroupsSubmitted: 2, numGroupsTrainable: 1, numTrajectories: 4, reward: 0.75, rewardStdDev: 0.25 });
    expect(plan.learningRate).toBeCloseTo(1e-4 * 2, 12);
    expect(rlJobMetrics(plan)).toEqual({ reward: 0.75, reward_std_dev: 0.25, num_trajectories: 4, num_groups_submitted: 2, num_groups_trainable: 1 });
    expect(planRlJob(lm, [flat], settings())).toMatchObject({ steps: [], numSequences: 0, numGroupsTrainable: 0 });
  });

  it('packs the histories into steps of at most packedSequenceLength tokens', () => {
    const group = { trajectories: [trajectory(1, [40]), trajectory(0, [41]), trajectory(1, [42]), trajectory(0, [43])] };
    const length = planRlJob(lm, [group], settings()).steps[0][0].sequence.tokens.length;
    expect(planRlJob(lm, [group], settings({ packedSequenceLength: 2 * length })).steps.map((s) => s.length)).toEqual([2, 2]);
    expect(planRlJob(lm, [group], settings({ packedSequenceLength: length })).numSequences).toBe(4);
  });

  it('refuses a history it cannot train, named by its place in the job\'s request', () => {
    const plan = (groups: TrainingTrajectoryGroup[], changes: Partial<TrainingRlSettings> = {}, model = lm) => () => planRlJob(model, groups, settings(changes));
    const noLogprobs = { trajectories: [trajectory(1, [40]), { ...history([41], null), reward: 0 }] };
    expect(plan([noLogprobs])).toThrow(
      'trajectory_groups[0].trajectories[1]: a Choice has no sampling logprobs (allowTrainingWithoutLogprobs or precalculateLogprobs would train it)',
    );
    expect(plan([noLogprobs], { allowTrainingWithoutLogprobs: true })().numSequences).toBe(1);
    expect(plan([noLogprobs], { precalculateLogprobs: true })().numSequences).toBe(1);

    const outside = { trajectories: [trajectory(1, [40]), trajectory(0, [41], [history([10_000_000])])] };
    expect(plan([outside, outside])).toThrow(/^trajectory_groups\[0\]\.trajectories\[1\]\.additional_histories\[0\]: token id 10000000 is outside the vocabulary$/);

    const short = { ...lm, config: { ...lm.config, maxPositionEmbeddings: prompt.length } };
    expect(plan([{ trajectories: [trajectory(0, [40]), trajectory(1, [41])] }], {}, short)).toThrow(
      `trajectory_groups[0].trajectories[0]: ${prompt.length + 1} tokens exceed the model's ${prompt.length} positions`,
    );

    const untemplated = { ...lm, chatTemplate: null };
    expect(plan([{ trajectories: [trajectory(0, [40]), trajectory(1, [41])] }], {}, untemplated)).toThrow(
      'trajectory_groups[0].trajectories[0]: the model has no chat template (tokenizer_config.json chat_template)',
    );
  });
});

describe('groupAdvantages', () => {
  it('centres the rewards, scales them by their std, and balances them', () => {
    const std = 0.5;
    expect(groupAdvantages([1, 0, 1, 0], { scaleRewards: false, advantageBalance: 0 })).toEqual([0.5, -0.5, 0.5, -0.5]);
    groupAdvantages([1, 0, 1, 0], { scaleRewards: true, advantageBalance: 0 }).forEach((a, i) => expect(a).toBeCloseTo([0.5, -0.5, 0.5, -0.5][i] / (std + 1e-6), 6));
    expect(groupAdvantages([1, 0], { scaleRewards: false, advantageBalance: 0.5 })).toEqual([0.5, -0.25]);
    expect(groupAdvantages([1, 0], { scaleRewards: false, advantageBalance: -0.5 })).toEqual([0.25, -0.5]);
  });
});
