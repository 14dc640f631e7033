import {
  chatRequest,
  createModel,
  expectCheckpointsIntact,
  expectJobEndedOnce,
  isSuccess,
  startSftJob,
  TrainableModel,
  uploadSftData,
} from './support/faults';
import { Stack } from './support/stack';

// Two of each service that keeps or coordinates state, as the production overlay runs them:
// chat, the model registry and the training orchestrator each run twice, on one NATS and one
// database. Requests and jobs spread over both; nothing may be claimed, recorded or served twice.

const SFT_LINES = 6;

describe('two replicas of chat, the registry and the orchestrator', () => {
  let stack: Stack;
  let key: string;
  let fileId: string;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '64' } });
    stack.addTinyModel('trainyard/tiny-chat');
    for (const app of ['chat', 'model-registry', 'training-orchestrator'] as const) await stack.startReplica(app);
    key = (await stack.createKey('acme')).key;
    fileId = await uploadSftData(stack, key, SFT_LINES);
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('runs every job once, in order per model, with one checkpoint each and every step served', async () => {
    const models: TrainableModel[] = [];
    for (const name of ['replicas-a', 'replicas-b']) models.push(await createModel(stack, key, name));
    // Two jobs per model, created at once: the second of each waits for the first.
    const jobIds = await Promise.all(models.flatMap((model) => [startSftJob(stack, key, model, fileId), startSftJob(stack, key, model, fileId)]));
    const jobs = await Promise.all(jobIds.map((id) => expectJobEndedOnce(stack, key, id)));
    expect(jobs.map((j) => j.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // Claimed once each: a job claimed by both orchestrators would have run twice.
    expect(jobs.map((j) => j.attempts)).toEqual([1, 1, 1, 1]);
    for (const [i, model] of models.entries()) await expectCheckpointsIntact(stack, key, model, jobs.slice(2 * i, 2 * i + 2));
  }, 300_000);

  it('answers a burst of completions through both chat replicas, each once', async () => {
    const outcomes = await Promise.all(Array.from({ length: 24 }, (_, i) => chatRequest(stack, key, { model: 'trainyard/tiny-chat', maxTokens: 8, stream: i % 2 === 0 }).done));
    expect(outcomes.filter((o) => !isSuccess(o))).toEqual([]);
  }, 120_000);
});
