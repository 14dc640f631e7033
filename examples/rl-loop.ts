// An RL loop against Trainyard, the way OpenPipe ART drives the service:
//   1. get-or-create a trainable model (it starts at step 0, servable at once);
//   2. roll out groups of answers through chat completions with logprobs;
//   3. score them with a reward function;
//   4. post an RL training job with the groups, follow its events until training_ended;
//   5. chat with the new step, repeat; old checkpoints are deleted as ART does.
//
//   TRAINYARD_API_KEY=... npx tsx examples/rl-loop.ts
import OpenAI from 'openai';
import { api, configFromEnv, followJob, getOrCreateModel, newestStep, printEvent } from './client';

const PROMPTS = ['Name a fruit.', 'Say a colour.', 'Give me an animal.', 'Pick a number.'];
const GROUP_SIZE = 4;
const ITERATIONS = Number(process.env['ITERATIONS'] ?? 3);

/** The behaviour we want: short answers. Any function of the transcript works. */
function reward(answer: string): number {
  return -Math.min(answer.length, 200) / 200;
}

async function main(): Promise<void> {
  const config = configFromEnv();
  const openai = new OpenAI({ baseURL: config.baseUrl, apiKey: config.apiKey });
  const model = await getOrCreateModel(config, 'examples', 'short-answers');
  const name = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;

  for (let i = 0; i < ITERATIONS; i++) {
    const step = await newestStep(config, model.id);
    const groups = await Promise.all(
      PROMPTS.map(async (prompt) => {
        const messages = [{ role: 'user' as const, content: prompt }];
        const trajectories = await Promise.all(
          Array.from({ length: GROUP_SIZE }, async () => {
            const completion = await openai.chat.completions.create({
              model: `${name}:step${step}`,
              messages,
              max_tokens: 48,
              temperature: 1,
              logprobs: true,
              // @ts-expect-error an extension ART sends: token ids of prompt and completion
              return_token_ids: true,
            });
            const choice = completion.choices[0];
            // The Choice goes back exactly as received: its token ids are what gets trained.
            return { messages_and_choices: [...messages, choice], reward: reward(choice.message.content ?? '') };
          }),
        );
        return { trajectories };
      }),
    );
    const rewards = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
    console.log(`step ${step}: mean reward ${(rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(3)}`);

    const job = await api<{ id: string }>(config, 'POST', '/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: groups,
      experimental_config: { learning_rate: 1e-4 },
    });
    console.log(`training job ${job.id}`);
    await followJob(config, job.id, printEvent);

    const next = await newestStep(config, model.id);
    const reply = await openai.chat.completions.create({ model: `${name}:step${next}`, messages: [{ role: 'user', content: PROMPTS[0] }], max_tokens: 48 });
    console.log(`step ${next} says: ${JSON.stringify(reply.choices[0].message.content)}`);
    // Keep only the newest checkpoint, as ART's delete_checkpoints does.
    if (step < next) await api(config, 'DELETE', `/preview/models/${model.id}/checkpoints`, { steps: [step] });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
