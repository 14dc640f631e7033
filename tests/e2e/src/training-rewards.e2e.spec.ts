import OpenAI from 'openai';
import { trainInRounds } from './support/rl-rounds';
import { Stack } from './support/stack';

// RL through the HTTP API actually learns: a toy task with a verifiable reward (the one the
// engine's rl.spec.ts uses: 1 when the first sampled token is an ordinary token with an even
// id, chance about one half), rollouts through chat completions with logprobs as ART takes
// them, one RL job per round, fresh (seeded) rollouts from the new step. The tiny model learns
// it in a few jobs. No timing assertions: only the rewards the test itself measured.

const BASE = 'trainyard/tiny-chat';
const PROMPTS = ['pick a word', 'say anything', 'one token please', 'go'];
// 4 groups of 8, as in the engine test: with groups of 4 (16 rollouts a job) the reward
// sometimes fell for a job or two before rising, and 1 of 5 seeds failed the margin below at
// learning rate 1e-2 (1 of 5 at 3e-2); with 32 rollouts a job, 13 of 13 seeds passed, each
// reaching at least 0.9 within 4 jobs.
const GROUP = 8;
const MAX_JOBS = 5;
// The service's adapters are r 8, alpha 16 (a quarter of the engine test's scale at alpha 64,
// learning rate 2e-3), and each job starts a fresh optimizer: a larger step makes up for both.
const LEARNING_RATE = 1e-2;

interface Choice {
  token_ids?: number[];
  logprobs?: { content?: { token_id?: number }[] | null } | null;
}

const firstTokenId = (choice: Choice): number | undefined => choice.token_ids?.[0] ?? choice.logprobs?.content?.[0]?.token_id;
const reward = (choice: Choice) => {
  const id = firstTokenId(choice);
  return id !== undefined && id >= 3 && id % 2 === 0 ? 1 : 0;
};

describe('RL jobs raise the reward of fresh rollouts', () => {
  let stack: Stack;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '64', MAX_BATCH_SEQUENCES: '16' } });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const call = <T>(method: string, path: string, body?: unknown): Promise<T> => stack.json<T>(method, path, key, body);

  /** Groups of fresh rollouts from one step, each Choice exactly as the openai client returned it. */
  async function rollouts(model: string, round: number) {
    return Promise.all(
      PROMPTS.map(async (prompt, p) => {
        const messages = [{ role: 'user' as const, content: prompt }];
        const trajectories = await Promise.all(
          Array.from({ length: GROUP }, async (_, i) => {
            const completion = await client.chat.completions.create({
              model,
              messages,
              max_tokens: 2,
              temperature: 1,
              seed: round * 1000 + p * 100 + i,
              logprobs: true,
              // @ts-expect-error ART's extension, sent as an extra body field
              return_token_ids: true,
            });
            const choice = completion.choices[0];
            return { messages_and_choices: [...messages, choice], reward: reward(choice as Choice) };
          }),
        );
        return { trajectories };
      }),
    );
  }

  it('over a few RL jobs, the mean reward of fresh rollouts rises clearly above its start', async () => {
    const model = await call<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', {
      entity: null,
      project: 'toy',
      name: 'even-first-token',
      base_model: BASE,
      return_existing: true,
    });
    const rewards = await trainInRounds(stack, key, {
      model: { id: model.id, name: `wandb-artifact:///${model.entity}/${model.project}/${model.name}` },
      rollouts,
      learningRate: LEARNING_RATE,
      maxJobs: MAX_JOBS,
      target: 0.9,
    });

    expect(rewards[0]).toBeLessThan(0.8); // the task starts near chance, with room to improve
    expect(rewards.at(-1)! - rewards[0]).toBeGreaterThanOrEqual(0.25);
  }, 240_000);
});
