// Supervised fine-tuning against Trainyard: upload a JSONL dataset through the
// OpenAI-compatible files route, start an SFT job, follow it, chat with the result.
//
//   TRAINYARD_API_KEY=... npx tsx examples/sft.ts [dataset.jsonl]
import { readFileSync } from 'node:fs';
import OpenAI, { toFile } from 'openai';
import { api, configFromEnv, followJob, getOrCreateModel, newestStep, printEvent } from './client';

/** One conversation per line; only the assistant's tokens are trained. */
const SAMPLE = [
  ['What is the capital of France?', 'Paris.'],
  ['What is 2 + 2?', '4.'],
  ['Translate "hello" to Spanish.', 'Hola.'],
  ['Name a primary colour.', 'Red.'],
]
  .map(([q, a]) => JSON.stringify({ messages: [{ role: 'system', content: 'Answer in one word.' }, { role: 'user', content: q }, { role: 'assistant', content: a }] }))
  .join('\n');

async function main(): Promise<void> {
  const config = configFromEnv();
  const openai = new OpenAI({ baseURL: config.baseUrl, apiKey: config.apiKey });
  const data = process.argv[2] ? readFileSync(process.argv[2]) : Buffer.from(SAMPLE);
  const file = await openai.files.create({ file: await toFile(data, 'sft.jsonl'), purpose: 'fine-tune' });
  console.log(`uploaded ${file.id} (${file.bytes} bytes)`);

  const model = await getOrCreateModel(config, 'examples', 'one-word');
  // training_data_url also takes an http(s) URL at a public address (or a host in the service's
  // SFT_DATA_ALLOWED_HOSTS) and, with the service's W&B key set, a wandb-artifact:/// reference.
  const job = await api<{ id: string }>(config, 'POST', '/preview/sft-training-jobs', {
    model_id: model.id,
    training_data_url: file.id,
    config: { batch_size: 2, learning_rate: 1e-4 },
  });
  console.log(`SFT job ${job.id}`);
  await followJob(config, job.id, printEvent);

  const step = await newestStep(config, model.id);
  const name = `wandb-artifact:///${model.entity}/${model.project}/${model.name}:step${step}`;
  const reply = await openai.chat.completions.create({
    model: name,
    messages: [{ role: 'system', content: 'Answer in one word.' }, { role: 'user', content: 'What is the capital of Italy?' }],
    max_tokens: 16,
  });
  console.log(`${name} says: ${JSON.stringify(reply.choices[0].message.content)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
