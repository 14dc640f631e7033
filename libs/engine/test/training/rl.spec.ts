import { LoadedModel, loadModel } from '../../src/loader';
import { DEFAULT_LORA_SPEC } from '../../src/lora/peft';
import { generateBatch } from '../../src/generate';
import { RLTrajectoryGroup, buildRlSequence } from '../../src/training/sequences';
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

describe('RL on a verifiable toy task (wasm, tiny model)', () => {
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('rl'));
  });
  afterAll(() => lm.dispose());

  const reward = (ids: number[]) => (ids[0] >= 3 && ids[0] % 2 === 0 ? 1 : 0);

  async function sampleGroups(seed: number): Promise<RLTrajectoryGroup[]> {
    const template = lm.chatTemplate!;
    const groups: RLTrajectoryGroup[] = [];
    for (const [p, text] of PROMPTS.entries()) {
      const messages = [{ role: 'user', content: text }];
      const prompt = lm.tokenizer.encode(template.render(messages, { addGenerationPrompt: true }));
      const results = await generateBatch(
        lm,
        Array.from({ length: GROUP }, () => prompt),
        Array.from({ length: GROUP }, (_, i) => ({ temperature: 1, maxTokens: 2, seed: seed * 1000 + p * 100 + i })),
      );
      groups.push({
        trajectories: results.map((r) => ({
          messagesAndChoices: [
            ...messages,
            { choice: { tokenIds: r.tokenIds, logprobs: r.tokens.map((t) => t.logprob), message: { role: 'assistant', content: r.text } } },
          ],
          reward: reward(r.tokenIds),
        })),
      });
    }
    return groups;
  }

  const meanReward = (groups: RLTrajectoryGroup[]) => {
    const all = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
    return all.reduce((a, b) => a + b, 0) / all.length;
  };

  it('places the Choice token ids exactly, with their logprobs, and nothing else trainable', async () => {
    const [group] = await sampleGroups(0);
    const t = group.trajectories[0];
    const seq = buildRlSequence(lm, t);
    const choice = (t.messagesAndChoices[1] as { choice: { tokenIds: number[]; logprobs: number[] } }).choice;
    expect(seq.tokens.filter((_, i) => seq.mask[i] === 1)).toEqual(choice.tokenIds);
    expect(seq.logprobs.filter((_, i) => seq.mask[i] === 1)).toEqual(choice.logprobs);
    const prompt = lm.tokenizer.encode(lm.chatTemplate!.render([{ role: 'user', content: 'pick a word' }], { addGenerationPrompt: true }));
    expect(seq.tokens.slice(0, prompt.length)).toEqual(prompt);
  });

  it.each(['cispo', 'ppo'] as const)('%s raises the mean reward from chance to at least 0.9', async (lossFn) => {
    const config = rlConfig({ ...(lossFn === 'ppo' ? PPO : {}), learningRate: 2e-3 });
    const trainer = new LoraTrainer(lm, { r: 8, alpha: 64, targetModules: DEFAULT_LORA_SPEC.targetModules }, undefined, { seed: 3 });
    try {
      const rewards: number[] = [];
      let metrics: StepMetrics | null = null;
      let groups = await sampleGroups(1);
      rewards.push(meanReward(groups));
      for (let iteration = 2; iteration <= 25 && rewards[rewards.length - 1] < 0.9; iteration++) {
        const plan = trainer.planRl(groups, config);
        expect(plan.numSequences).toBeGreaterThan(0);
        await trainer.trainRl(plan, config, (m) => {
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
          'num_groups_submitted',
          'num_groups_trainable',
          'num_trainable_tokens',
          'num_trajectories',
          'policy_loss',
          'reward',
          'reward_std_dev',
          'tokens_per_second',
        ].sort(),
      );
    } finally {
      trainer.dispose();
    }
  }, 300_000);

  it('skips groups whose rewards are all equal and knows num_sequences before training', async () => {
    const groups = await sampleGroups(5);
    const flat: RLTrajectoryGroup = { trajectories: groups[0].trajectories.map((t) => ({ ...t, reward: 1 })) };
    const config = rlConfig({ packedSequenceLength: 64 });
    const trainer = new LoraTrainer(lm, { r: 2, alpha: 4, targetModules: ['q_proj'] });
    try {
      const plan = trainer.planRl([flat, groups[1]], config);
      expect(plan.numGroupsSubmitted).toBe(2);
      expect(plan.numGroupsTrainable).toBe(groups[1].trajectories.some((t) => t.reward !== groups[1].trajectories[0].reward) ? 1 : 0);
      expect(plan.steps.flat().every((i) => i.group === 1)).toBe(true);
      let steps = 0;
      await trainer.trainRl(plan, config, (_, __, total) => {
        steps++;
        expect(total).toBe(plan.numSequences);
      });
      expect(steps).toBe(plan.numSequences);
      const missing = { trajectories: groups[1].trajectories.map((t) => ({ ...t, messagesAndChoices: t.messagesAndChoices.map((m) => ('choice' in m ? { choice: { ...m.choice, logprobs: null } } : m)) })) };
      if (plan.numGroupsTrainable > 0) {
        expect(() => trainer.planRl([missing], config)).toThrow(/^groups\[0\]\.trajectories\[\d+\]: a Choice has no sampling logprobs/);
        const allowed = rlConfig({ packedSequenceLength: 64, allowTrainingWithoutLogprobs: true });
        expect(trainer.planRl([missing], allowed).numSequences).toBeGreaterThan(0);
      }
    } finally {
      trainer.dispose();
    }
  }, 60_000);
});
