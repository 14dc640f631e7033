import { LoadedModel, loadModel } from '../../src/loader';
import { DEFAULT_LORA_SPEC } from '../../src/lora/peft';
import { generateBatch } from '../../src/generate';
import { nextTokenLogprobValues, nextTokenRows } from '../../src/training/checkpointing';
import { RLPlan, RLPlanItem, packRlSteps } from '../../src/training/rl-steps';
import { RLHistory, buildRlSequence } from '../../src/training/sequences';
import { LoraTrainer, StepMetrics } from '../../src/training/trainer';
import { makeTiny, useBackend } from '../helpers';
import { PPO, rlConfig } from './rl-config';

/**
 * A toy task with a verifiable reward: 1 when the completion's first token is an ordinary
 * (non-special) token with an even id, else 0 (chance about one half; seen: 0.50, then 0.94
 * after 7 steps). Fresh samples each step make the policy ratio 1, so cispo and ppo take the
 * same steps here; their differences are checked on hand-made inputs in rl-loss.spec.ts. Sample groups with the engine, reward, train, sample again.
 */
const PROMPTS = ['pick a word', 'say anything', 'one token please', 'go'];
const GROUP = 8;

/** A sampled history and its reward. */
interface Rollout {
  history: RLHistory;
  reward: number;
}

describe('RL on a verifiable toy task (wasm, tiny model)', () => {
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('rl'));
  });
  afterAll(() => lm.dispose());

  const reward = (ids: number[]) => (ids[0] >= 3 && ids[0] % 2 === 0 ? 1 : 0);

  /** One group of rollouts per prompt. */
  async function sampleGroups(seed: number): Promise<Rollout[][]> {
    const template = lm.chatTemplate!;
    const groups: Rollout[][] = [];
    for (const [p, text] of PROMPTS.entries()) {
      const messages = [{ role: 'user', content: text }];
      const prompt = lm.tokenizer.encode(template.render(messages, { addGenerationPrompt: true }));
      const results = await generateBatch(
        lm,
        Array.from({ length: GROUP }, () => prompt),
        Array.from({ length: GROUP }, (_, i) => ({ temperature: 1, maxTokens: 2, seed: seed * 1000 + p * 100 + i })),
      );
      groups.push(
        results.map((r) => ({
          history: {
            messagesAndChoices: [
              ...messages,
              { choice: { tokenIds: r.tokenIds, logprobs: r.tokens.map((t) => t.logprob), message: { role: 'assistant', content: r.text } } },
            ],
          },
          reward: reward(r.tokenIds),
        })),
      );
    }
    return groups;
  }

  const meanReward = (groups: Rollout[][]) => {
    const all = groups.flatMap((g) => g.map((t) => t.reward));
    return all.reduce((a, b) => a + b, 0) / all.length;
  };

  /**
   * The trainer's inputs from groups of rollouts, with group-relative advantages (the reward
   * less the group's mean, over the group's standard deviation: what the training worker gives
   * an ART job's trajectories by default); rollouts without an advantage are left out.
   */
  function plan(groups: Rollout[][], learningRate: number): RLPlan {
    const items: RLPlanItem[] = groups.flatMap((group) => {
      const rewards = group.map((r) => r.reward);
      const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
      return group.flatMap((r) => (r.reward === mean ? [] : [{ sequence: buildRlSequence(lm, r.history), advantage: (r.reward - mean) / (std + 1e-6) }]));
    });
    return { steps: packRlSteps(items, 2048), learningRate };
  }

  it('places the Choice token ids exactly, with their logprobs, and nothing else trainable', async () => {
    const [group] = await sampleGroups(0);
    const t = group[0].history;
    const seq = buildRlSequence(lm, t);
    const choice = (t.messagesAndChoices[1] as { choice: { tokenIds: number[]; logprobs: number[] } }).choice;
    expect(seq.tokens.filter((_, i) => seq.mask[i] === 1)).toEqual(choice.tokenIds);
    expect(seq.logprobs.filter((_, i) => seq.mask[i] === 1)).toEqual(choice.logprobs);
    const prompt = lm.tokenizer.encode(lm.chatTemplate!.render([{ role: 'user', content: 'pick a word' }], { addGenerationPrompt: true }));
    expect(seq.tokens.slice(0, prompt.length)).toEqual(prompt);
  });

  it.each(['cispo', 'ppo'] as const)('%s raises the mean reward from chance to at least 0.9', async (lossFn) => {
    const config = rlConfig(lossFn === 'ppo' ? PPO : {});
    const trainer = new LoraTrainer(lm, { r: 8, alpha: 64, targetModules: DEFAULT_LORA_SPEC.targetModules }, undefined, { seed: 3 });
    try {
      const rewards: number[] = [];
      let metrics: StepMetrics | null = null;
      let groups = await sampleGroups(1);
      rewards.push(meanReward(groups));
      for (let iteration = 2; iteration <= 25 && rewards[rewards.length - 1] < 0.9; iteration++) {
        const steps = plan(groups, 2e-3);
        expect(steps.steps.length).toBeGreaterThan(0);
        await trainer.trainRl(steps, config, (m) => {
          metrics = m;
        });
        groups = await sampleGroups(iteration);
        rewards.push(meanReward(groups));
      }
      expect(rewards[0]).toBeGreaterThan(0.2);
      expect(rewards[0]).toBeLessThan(0.8);
      expect(rewards[rewards.length - 1]).toBeGreaterThanOrEqual(0.9);
      expect(Object.keys(metrics!).sort()).toEqual(
        [
          'entropy',
          'grad_norm',
          'learning_rate',
          'loss',
          'num_tokens',
          'num_trainable_tokens',
          'policy_loss',
          'tokens_per_second',
        ].sort(),
      );
    } finally {
      trainer.dispose();
    }
  }, 300_000);

  it("trains each sequence's masked tokens against their sampling logprobs, weighted by its advantage", async () => {
    // Two rows of different lengths and masks, sampled 0.1 nats below the policy: with a fresh
    // adapter (B = 0) the policy is the base model, so every ratio is e^0.1, inside cispo's clip
    // range, and the loss is -sum(ratio * A * w * l over trained tokens) / trained tokens, each
    // row's w being (1 / its trained tokens) x (trained tokens / rows).
    const rows = [
      { tokens: [1, 300, 301, 20, 21, 22], mask: [0, 0, 0, 1, 1, 1], advantage: 1 },
      { tokens: [1, 40, 41, 42, 43], mask: [0, 0, 1, 1, 0], advantage: -0.5 },
    ];
    const current = await Promise.all(rows.map(async (r) => (await nextTokenLogprobValues(lm.model, nextTokenRows([r.tokens]), 64)).logprobs));
    const items: RLPlanItem[] = rows.map((r, k) => ({
      sequence: { tokens: r.tokens, mask: r.mask, logprobs: r.mask.map((m, t) => (m ? current[k][t - 1] - 0.1 : NaN)) },
      advantage: r.advantage,
    }));
    const total = 5;
    let expected = 0;
    rows.forEach((r, k) => {
      const trained = r.mask.reduce((a, b) => a + b, 0);
      const w = (1 / trained) * (total / rows.length);
      r.mask.forEach((m, t) => {
        if (m) expected -= Math.exp(0.1) * r.advantage * w * current[k][t - 1];
      });
    });
    expected /= total + 1e-6;

    const trainer = new LoraTrainer(lm, { r: 2, alpha: 4, targetModules: ['q_proj'] });
    try {
      const [metrics] = await trainer.trainRl({ steps: [items], learningRate: 1e-3 }, rlConfig());
      expect(metrics['num_trainable_tokens']).toBe(total);
      expect(metrics['num_tokens']).toBe(rows[0].tokens.length + rows[1].tokens.length);
      expect(metrics['loss']).toBeCloseTo(expected, 4);
      expect(metrics['learning_rate']).toBe(1e-3);
    } finally {
      trainer.dispose();
    }
  });
});
