import type { TrainingJobRecord } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import OpenAI, { toFile } from 'openai';
import type { FineTuningJob } from 'openai/resources/fine-tuning/jobs/jobs';
import { Stack } from './support/stack';

// Traffic that becomes training data, through the whole stack with the official openai SDK:
// chat completions kept with `store` and `metadata` (streamed or not), listed by metadata,
// retrieved, graded by updating their metadata, deleted; exported as SFT JSONL that a
// fine-tuning job trains on, and as ART trajectory groups, with the token ids and logprobs that
// were served, that an RL job trains on. Stored responses export the same way. Another
// entity sees, exports and deletes none of it.

const BASE = 'trainyard/tiny-chat';
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

interface ArtExport {
  object: string;
  trajectory_groups: {
    metadata: Record<string, string>;
    trajectories: {
      reward: number;
      metadata: Record<string, string>;
      messages_and_choices: (Record<string, unknown> & { token_ids?: number[]; logprobs?: { content: { token_id: number; logprob: number }[] } | null })[];
    }[];
  }[];
  skipped: { id: string; reason: string }[];
}

describe('stored chat completions as training data', () => {
  let stack: Stack;
  let key: string;
  let otherKey: string;
  let client: OpenAI;
  let other: OpenAI;
  let model: { id: string; entity: string; project: string; name: string };
  let modelName: string;
  /** The stored completions, as their client received them, with the metadata they were stored with. */
  const stored: { completion: OpenAI.ChatCompletion; metadata: Record<string, string> }[] = [];
  const run = `e2e-${Date.now()}`;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '64' } });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    otherKey = (await stack.createKey('globex')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    other = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: otherKey, maxRetries: 0 });
    model = await stack.json('POST', '/v1/preview/models', key, { entity: null, project: 'stored', name: 'agent', base_model: BASE, return_existing: true });
    modelName = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
  const rows = (id: string) => stack.withDatabase(async (db) => Number((await db.query('SELECT count(*) AS n FROM stored_chat_completions WHERE id = $1', [id])).rows[0].n));
  const exportAs = <T>(as: string, path: string, body: Record<string, unknown>) => stack.call<T>('POST', path, { key: as, body });
  const exportSft = async (as: string, body: Record<string, unknown>) => {
    const res = await stack.fetch('/v1/chat/completions/export', { method: 'POST', key: as, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ format: 'sft', ...body }) });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  it('stores a completion made with store and metadata, and nothing without store', async () => {
    for (const [group, prompt] of [['g1', 'Count to three.'], ['g2', 'Name a colour.']]) {
      for (let i = 0; i < 2; i++) {
        const metadata = { run, group_id: group };
        const completion = await client.chat.completions.create({ model: modelName, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt }], max_tokens: 8, temperature: 1, store: true, metadata });
        stored.push({ completion, metadata });
      }
    }
    const unstored = await client.chat.completions.create({ model: modelName, messages: [{ role: 'user', content: 'Not kept.' }], max_tokens: 4, metadata: { run } });
    expect(await rows(unstored.id)).toBe(0);
    expect((await failure(client.chat.completions.retrieve(unstored.id)))?.status).toBe(404);

    // Retrieved exactly as it was answered, with its metadata.
    const first = stored[0];
    expect(await client.chat.completions.retrieve(first.completion.id)).toEqual({ ...first.completion, metadata: first.metadata });
  });

  it('stores a streamed completion before the stream ends, and tokens a completion did not show', async () => {
    const stream = await client.chat.completions.create({ model: modelName, messages: [{ role: 'user', content: 'Stream this.' }], max_tokens: 6, stream: true, store: true, metadata: { run: `${run}-stream` } });
    let id = '';
    let text = '';
    for await (const chunk of stream) {
      id = chunk.id;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    const kept = await client.chat.completions.retrieve(id);
    expect(kept.choices[0].message.content).toBe(text);
    expect(kept.metadata).toEqual({ run: `${run}-stream` });

    const hidden = await client.chat.completions.create({ model: modelName, messages: [{ role: 'user', content: 'No logprobs shown.' }], max_tokens: 6, logprobs: false, store: true, metadata: { run: `${run}-hidden`, reward: '1' } });
    expect(hidden.choices[0].logprobs).toBeNull();
    const exported = await exportAs<ArtExport>(key, '/v1/chat/completions/export', { format: 'art', metadata: { run: `${run}-hidden` } });
    const choice = exported.body.trajectory_groups[0].trajectories[0].messages_and_choices.at(-1);
    expect(choice?.token_ids?.length).toBe(hidden.usage?.completion_tokens);
    expect(choice?.logprobs?.content.map((t) => t.token_id)).toEqual(choice?.token_ids);
  });

  it('lists by metadata and model with the SDK, paging with after, oldest first', async () => {
    const listed: string[] = [];
    for await (const completion of client.chat.completions.list({ metadata: { run }, limit: 3 })) listed.push(completion.id);
    expect(listed).toEqual(stored.map((s) => s.completion.id));
    const g2 = await client.chat.completions.list({ metadata: { run, group_id: 'g2' }, order: 'desc' });
    expect(g2.data.map((c) => c.id)).toEqual([stored[3].completion.id, stored[2].completion.id]);
    expect((await client.chat.completions.list({ metadata: { run }, model: BASE })).data).toEqual([]);
    expect((await client.chat.completions.list({ metadata: { run }, model: modelName })).data).toHaveLength(4);
  });

  it('lists the messages of a stored completion', async () => {
    const messages = [];
    for await (const message of client.chat.completions.messages.list(stored[0].completion.id)) messages.push(message);
    expect(messages).toEqual([
      { id: `${stored[0].completion.id}-0`, role: 'system', content: 'Be brief.', content_parts: null },
      { id: `${stored[0].completion.id}-1`, role: 'user', content: 'Count to three.', content_parts: null },
    ]);
  });

  it('grades completions by updating their metadata', async () => {
    for (const [i, s] of stored.entries()) {
      s.metadata = { ...s.metadata, reward: String(i % 2) };
      const updated = await client.chat.completions.update(s.completion.id, { metadata: s.metadata });
      expect(updated.metadata).toEqual(s.metadata);
    }
    expect((await client.chat.completions.retrieve(stored[1].completion.id)).metadata).toEqual(stored[1].metadata);
  });

  it('exports SFT JSONL that a fine-tuning job trains on', async () => {
    const sft = await exportSft(key, { metadata: { run } });
    expect(sft.status).toBe(200);
    expect(sft.type).toMatch(/application\/jsonl/);
    const lines = sft.text.trim().split('\n').map((line) => JSON.parse(line) as { messages: { role: string; content: string | null }[] });
    expect(lines).toHaveLength(4);
    expect(lines[0].messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Count to three.' },
      { role: 'assistant', content: stored[0].completion.choices[0].message.content },
    ]);

    const file = await client.files.create({ file: await toFile(Buffer.from(sft.text), 'traffic.jsonl'), purpose: 'fine-tune' });
    const job = await client.fineTuning.jobs.create({ model: BASE, training_file: file.id, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 1, batch_size: 2 } } } });
    const done = await waitFor(
      async () => {
        const current: FineTuningJob = await client.fineTuning.jobs.retrieve(job.id);
        return TERMINAL.includes(current.status) && current;
      },
      { what: `fine-tuning job ${job.id}`, timeoutMs: 240_000, intervalMs: 500 },
    );
    expect(done).toMatchObject({ status: 'succeeded', error: null });
  }, 300_000);

  it('exports ART groups with the exact tokens served, and an RL job trains on them', async () => {
    const exported = await exportAs<ArtExport>(key, '/v1/chat/completions/export', { format: 'art', metadata: { run } });
    expect(exported.status).toBe(200);
    const { trajectory_groups: groups, skipped } = exported.body;
    expect(skipped).toEqual([]);
    expect(groups.map((g) => [g.metadata, g.trajectories.map((t) => t.reward)])).toEqual([
      [{ group_id: 'g1' }, [0, 1]],
      [{ group_id: 'g2' }, [0, 1]],
    ]);
    groups.flatMap((g) => g.trajectories).forEach((trajectory, i) => {
      const served = stored[i].completion.choices[0] as OpenAI.ChatCompletion.Choice & { token_ids: number[] };
      const choice = trajectory.messages_and_choices.at(-1);
      expect(trajectory.metadata['source_id']).toBe(stored[i].completion.id);
      expect(choice?.['message']).toEqual({ role: 'assistant', content: served.message.content });
      expect(choice?.token_ids).toEqual(served.token_ids);
      expect(choice?.logprobs?.content.map((t) => [t.token_id, t.logprob])).toEqual(served.logprobs?.content?.map((t) => [(t as unknown as { token_id: number }).token_id, t.logprob]));
    });

    const before = (await stack.json<{ data: { step: number }[] }>('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`, key)).data[0].step;
    const job = await stack.json<{ id: string }>('POST', '/v1/preview/training-jobs', key, { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-3 } });
    const done = await waitFor(
      async () => {
        const record = await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.id}`, key);
        return TERMINAL.includes(record.status) && record;
      },
      { what: `RL job ${job.id}`, timeoutMs: 240_000, intervalMs: 500 },
    );
    expect(done).toMatchObject({ status: 'succeeded', error_message: null, checkpoint_step: before + 1 });
    // It trained on the served tokens: both groups had rewards to learn from.
    const events = await stack.json<{ data: { type: string; data: Record<string, number> }[] }>('GET', `/v1/preview/training-jobs/${job.id}/events?limit=100`, key);
    const steps = events.data.filter((e) => e.type === 'gradient_step');
    expect(steps.length).toBeGreaterThan(0);
    expect(Math.max(...steps.map((e) => e.data['num_groups_trainable'] ?? 0))).toBe(2);
    expect(steps.reduce((sum, e) => sum + (e.data['num_trainable_tokens'] ?? 0), 0)).toBeGreaterThan(0);
  }, 300_000);

  it('exports stored conversations of the Responses API, each run one trajectory, and it trains', async () => {
    const runs: [OpenAI.Responses.Response, OpenAI.Responses.Response][] = [];
    for (const [i, opener] of ['Say something.', 'Say anything.'].entries()) {
      // The turns of one run share a trajectory_id; the last turn's metadata carries the reward.
      const meta = { run: `${run}-responses`, group_id: 'r', trajectory_id: `conversation-${i}` };
      const first = await client.responses.create({ model: modelName, input: opener, max_output_tokens: 6, metadata: meta });
      const second = await client.responses.create({ model: modelName, previous_response_id: first.id, input: 'And then?', max_output_tokens: 6, metadata: { ...meta, reward: String(i) } });
      runs.push([first, second]);
    }
    const exported = await exportAs<ArtExport>(key, '/v1/responses/export', { format: 'art', metadata: { run: `${run}-responses` } });
    expect(exported.status).toBe(200);
    expect(exported.body.skipped).toEqual([]);
    const [group] = exported.body.trajectory_groups;
    expect(exported.body.trajectory_groups).toHaveLength(1);
    expect(group.trajectories.map((t) => [t.metadata['source_ids'], t.reward])).toEqual(runs.map(([first, second], i) => [`${first.id},${second.id}`, i]));
    group.trajectories.forEach((trajectory, i) => {
      const [first, second] = runs[i];
      const items = trajectory.messages_and_choices;
      // Both turns' answers are Choices with the tokens they were served; the inputs are plain messages.
      expect(items.map((item) => ('message' in item ? 'choice' : item['role']))).toEqual(['user', 'choice', 'user', 'choice']);
      expect(items[0]).toEqual({ role: 'user', content: i === 0 ? 'Say something.' : 'Say anything.' });
      expect(items[1]['message']).toMatchObject({ role: 'assistant', content: first.output_text });
      expect(items[1].token_ids?.length).toBe(first.usage?.output_tokens);
      expect(items[3]['message']).toMatchObject({ role: 'assistant', content: second.output_text });
      expect(items[3].token_ids?.length).toBe(second.usage?.output_tokens);
      expect(items[3].logprobs?.content.map((t) => t.token_id)).toEqual(items[3].token_ids);
    });

    const sft = await stack.fetch('/v1/responses/export', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ format: 'sft', ids: [runs[0][1].id] }) });
    const lines = (await sft.text()).trim().split('\n').map((line) => JSON.parse(line) as { messages: { role: string }[] });
    expect(lines.map((line) => line.messages.map((m) => m.role))).toEqual([['user', 'assistant', 'user', 'assistant']]);

    const job = await stack.json<{ id: string }>('POST', '/v1/preview/training-jobs', key, { model_id: model.id, trajectory_groups: exported.body.trajectory_groups });
    const done = await waitFor(
      async () => {
        const record = await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.id}`, key);
        return TERMINAL.includes(record.status) && record;
      },
      { what: `RL job ${job.id}`, timeoutMs: 240_000, intervalMs: 500 },
    );
    expect(done).toMatchObject({ status: 'succeeded', error_message: null });
  }, 300_000);

  it('refuses a bad export by naming the field, and an export that needs a reward says which are missing', async () => {
    const bad = await exportAs<{ error: { param: string | null; message: string } }>(key, '/v1/chat/completions/export', { format: 'csv' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/format/);
    const unrewarded = await exportAs<ArtExport>(key, '/v1/chat/completions/export', { format: 'art', metadata: { run: `${run}-stream` } });
    expect(unrewarded.body.trajectory_groups).toEqual([]);
    expect(unrewarded.body.skipped).toEqual([{ id: expect.stringMatching(/^chatcmpl-/), reason: 'metadata.reward is missing: it is the reward' }]);
  });

  it('another entity sees, exports, updates and deletes none of them', async () => {
    const id = stored[0].completion.id;
    expect((await failure(other.chat.completions.retrieve(id)))?.status).toBe(404);
    expect((await failure(other.chat.completions.messages.list(id)))?.status).toBe(404);
    expect((await failure(other.chat.completions.update(id, { metadata: { taken: 'yes' } })))?.status).toBe(404);
    expect((await failure(other.chat.completions.delete(id)))?.status).toBe(404);
    expect((await other.chat.completions.list({ metadata: { run } })).data).toEqual([]);
    expect((await other.chat.completions.list()).data).toEqual([]);
    const art = await exportAs<ArtExport>(otherKey, '/v1/chat/completions/export', { format: 'art', ids: stored.map((s) => s.completion.id) });
    expect(art.body).toEqual({ object: 'trajectory_groups.export', trajectory_groups: [], skipped: [] });
    expect((await exportSft(otherKey, { metadata: { run } })).text).toBe('');
    const responses = await exportAs<ArtExport>(otherKey, '/v1/responses/export', { format: 'art', metadata: { run: `${run}-responses` } });
    expect(responses.body.trajectory_groups).toEqual([]);
    // The owner's completion is as it was.
    expect((await client.chat.completions.retrieve(id)).metadata).toEqual(stored[0].metadata);
  });

  it('deletes a stored completion for good', async () => {
    const id = stored[3].completion.id;
    expect(await client.chat.completions.delete(id)).toEqual({ id, object: 'chat.completion.deleted', deleted: true });
    expect(await rows(id)).toBe(0);
    expect((await failure(client.chat.completions.retrieve(id)))?.status).toBe(404);
    expect((await failure(client.chat.completions.delete(id)))?.status).toBe(404);
    expect((await client.chat.completions.list({ metadata: { run } })).data.map((c) => c.id)).not.toContain(id);
  });
});
