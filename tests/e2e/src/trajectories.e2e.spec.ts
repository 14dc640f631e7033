import type { Page, TrainingEventRecord, TrainingJobRecord, TrajectoryRecord } from '@trainyard/contracts';
import { Stack } from './support/stack';

// GET /v1/preview/models/{id}/trajectories over the whole stack: what POST .../log and RL
// training jobs send is kept per step and split, paged, filtered, trimmed to the retention
// limits, private to its entity and deleted with its model.

const BASE = 'trainyard/tiny-chat';
const MAX_COUNT = 10;
const MAX_BYTES = 4000;

/** A trajectory in the shape the ART client sends: a user turn, a Choice calling a tool, the tool's result. */
function toolTrajectory(reward: number, city: string) {
  return {
    reward,
    metrics: { turns: 2 },
    messages_and_choices: [
      { role: 'user', content: `Weather in ${city}?` },
      {
        index: 0,
        finish_reason: 'tool_calls',
        message: { role: 'assistant', content: null, tool_calls: [{ id: `call_${city}`, type: 'function', function: { name: 'weather', arguments: JSON.stringify({ city }) } }] },
        logprobs: { content: [{ token: '<tool_call>', logprob: -0.25 }] },
      },
      { role: 'tool', tool_call_id: `call_${city}`, content: 'rain\u0000' },
    ],
  };
}

describe('kept trajectories, end to end over HTTP', () => {
  let stack: Stack;
  let acme: string;
  let globex: string;
  let model: { id: string };
  let jobId: string;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { EMBEDDED_BASE_MODEL: BASE, TRAJECTORY_RETENTION_COUNT: String(MAX_COUNT), TRAJECTORY_RETENTION_BYTES: String(MAX_BYTES) },
    });
    acme = (await stack.createKey('acme')).key;
    globex = (await stack.createKey('globex')).key;
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const call = <T = Record<string, unknown>>(method: string, path: string, key: string, body?: unknown) => stack.call<T>(method, path, { key, body });
  const createModel = async (name: string) =>
    (await call<{ id: string }>('POST', '/v1/preview/models', acme, { entity: null, project: 'runs', name, base_model: BASE, return_existing: true })).body;
  const log = (modelId: string, split: string, trajectory_groups: unknown[]) => call('POST', `/v1/preview/models/${modelId}/log`, acme, { split, trajectory_groups });
  const list = (modelId: string, query = '', key = acme) => call<Page<TrajectoryRecord>>('GET', `/v1/preview/models/${modelId}/trajectories${query}`, key);
  const rewards = (page: Page<TrajectoryRecord>) => page.data.map((t) => t.reward);

  async function finalEvents(id: string): Promise<TrainingEventRecord[]> {
    for (let i = 0; i < 600; i++) {
      const { body } = await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${id}/events?limit=100`, acme);
      if (body.data.some((e) => e.type === 'training_ended' || e.type === 'training_failed')) return body.data;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`job ${id} did not end`);
  }

  it('keeps logged trajectories and a training job\'s groups at the step that produced them', async () => {
    model = await createModel('kept');
    expect((await log(model.id, 'train', [{ trajectories: [toolTrajectory(0, 'Oslo'), toolTrajectory(1, 'Rome')], metadata: { task: 't1' } }, { trajectories: [{ reward: 2 }, { reward: 3 }] }])).status).toBe(200);
    expect((await log(model.id, 'val', [{ trajectories: [{ reward: 5 }] }])).status).toBe(200);

    // Messages only, rewards that differ: an advantage, but no Choice tokens to train.
    const plain = (reward: number) => ({ reward, messages_and_choices: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
    const job = await call<{ id: string }>('POST', '/v1/preview/training-jobs', acme, { model_id: model.id, trajectory_groups: [{ trajectories: [plain(1), plain(0)] }] });
    expect(job.status).toBe(200);
    jobId = job.body.id;
    const events = await finalEvents(jobId);
    expect(events.at(-1)?.type).toBe('training_ended');
    expect(events[0]).toMatchObject({ type: 'training_started', data: { num_sequences: 0, no_gradient_steps_reason: expect.stringContaining('No trainable tokens') } });
    const record = (await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`, acme)).body;
    expect(record).toMatchObject({ status: 'succeeded', checkpoint_step: 1, no_gradient_steps_reason: expect.stringContaining('No trainable tokens') });

    // The job's groups are handed to the registry beside the job, not before its reply.
    for (let i = 0; (await list(model.id, `?job_id=${jobId}`)).body.data.length < 2; i++) {
      if (i > 150) throw new Error("the job's trajectories were never kept");
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await log(model.id, 'val', [{ trajectories: [{ reward: 7 }] }])).status).toBe(200);

    const all = (await list(model.id, '?limit=100')).body;
    expect(all.data.map((t) => [t.step, t.split, t.reward, t.job_id])).toEqual([
      [0, 'train', 0, null],
      [0, 'train', 1, null],
      [0, 'train', 2, null],
      [0, 'train', 3, null],
      [0, 'val', 5, null],
      [0, 'train', 1, jobId],
      [0, 'train', 0, jobId],
      [1, 'val', 7, null],
    ]);
    const [oslo] = all.data;
    expect(oslo).toMatchObject({ object: 'trajectory', model_id: model.id, group_index: 0, index: 0, group: { metadata: { task: 't1' } } });
    expect(oslo.trajectory).toEqual(toolTrajectory(0, 'Oslo'));
    expect(oslo.bytes).toBe(Buffer.byteLength(JSON.stringify(toolTrajectory(0, 'Oslo'))));
  }, 180_000);

  it('pages in both orders: has_more right on every page, no item twice, an empty page past the end', async () => {
    for (const order of ['asc', 'desc']) {
      const seen: string[] = [];
      const more: boolean[] = [];
      let after = '';
      for (;;) {
        const page = (await list(model.id, `?limit=3&order=${order}${after ? `&after=${after}` : ''}`)).body;
        seen.push(...page.data.map((t) => t.id));
        more.push(page.has_more);
        if (!page.has_more) {
          const past = (await list(model.id, `?limit=3&order=${order}&after=${page.last_id}`)).body;
          expect(past).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
          break;
        }
        expect(page.first_id).toBe(page.data[0].id);
        after = page.last_id as string;
      }
      expect(more).toEqual([true, true, false]);
      const all = (await list(model.id, `?limit=100&order=${order}`)).body.data.map((t) => t.id);
      expect(seen).toEqual(all);
      expect(new Set(seen).size).toBe(8);
    }
    const foreignCursor = await list(model.id, '?after=00000000-0000-0000-0000-000000000000');
    expect(foreignCursor.status).toBe(400);
    expect((await list(model.id, '?limit=0')).status).toBe(422);
  });

  it('filters by step, split, job and reward', async () => {
    expect(rewards((await list(model.id, '?step=1')).body)).toEqual([7]);
    expect(rewards((await list(model.id, '?split=train&limit=100')).body)).toEqual([0, 1, 2, 3, 1, 0]);
    expect(rewards((await list(model.id, '?split=val&step=0')).body)).toEqual([5]);
    expect(rewards((await list(model.id, '?min_reward=2&max_reward=5&order=desc')).body)).toEqual([5, 3, 2]);
    expect(rewards((await list(model.id, `?job_id=${jobId}`)).body)).toEqual([1, 0]);
    expect((await list(model.id, '?split=nope')).body.data).toEqual([]);
    expect((await list(model.id, '?step=-1')).status).toBe(422);
    expect((await list(model.id, '?min_reward=lots')).status).toBe(422);
    // A split POST .../log would refuse (here a NUL, which PostgreSQL text cannot hold) is refused as a filter too.
    expect((await list(model.id, '?split=a%00b')).status).toBe(422);
  });

  it("is private to the model's entity: another entity's model is a 404", async () => {
    for (const query of ['', `?job_id=${jobId}`]) {
      const res = await list(model.id, query, globex);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Model ${model.id} not found` });
    }
    expect((await list('not-a-uuid')).status).toBe(404);
  });

  it('keeps at most the configured count and bytes per model, dropping the oldest first', async () => {
    const other = await createModel('retention');
    // Twelve in one call against a limit of ten: the first two go.
    expect((await log(other.id, 'train', [{ trajectories: Array.from({ length: 12 }, (_, i) => ({ reward: i })) }])).status).toBe(200);
    expect(rewards((await list(other.id, '?limit=100')).body)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);

    // A big one pushes out as many of the oldest as the byte limit needs.
    const big = { reward: 100, messages_and_choices: [{ role: 'user', content: 'x'.repeat(MAX_BYTES - 100) }] };
    expect((await log(other.id, 'train', [{ trajectories: [big] }])).status).toBe(200);
    const kept = (await list(other.id, '?limit=100')).body.data;
    expect(kept.reduce((sum, t) => sum + t.bytes, 0)).toBeLessThanOrEqual(MAX_BYTES);
    expect(kept.at(-1)?.reward).toBe(100);
    const survivors = kept.slice(0, -1).map((t) => t.reward);
    expect(survivors.length).toBeGreaterThan(0);
    expect(survivors.length).toBeLessThan(10);
    expect(survivors).toEqual([...Array.from({ length: 10 }, (_, i) => i + 2)].slice(10 - survivors.length));

    // One larger than the whole limit is not kept, and pushes nothing out; its metrics still count.
    const huge = { reward: 1000, messages_and_choices: [{ role: 'user', content: 'y'.repeat(MAX_BYTES) }] };
    const res = await log(other.id, 'huge', [{ trajectories: [huge] }]);
    expect(res.status).toBe(200);
    expect((res.body as { metrics: Record<string, number> }).metrics['huge/reward']).toBe(1000);
    expect((await list(other.id, '?limit=100')).body.data.map((t) => t.id)).toEqual(kept.map((t) => t.id));
    // The other model's trajectories are untouched by this one's limits.
    expect((await list(model.id, '?limit=100')).body.data).toHaveLength(8);
  });

  it("deletes a model's trajectories with the model", async () => {
    const count = () => stack.withDatabase(async (db) => Number((await db.query('SELECT count(*) FROM trajectories WHERE model_id = $1', [model.id])).rows[0].count));
    expect(await count()).toBe(8);
    expect((await call('DELETE', `/v1/preview/models/${model.id}`, acme)).status).toBe(200);
    expect(await count()).toBe(0);
    expect((await list(model.id)).status).toBe(404);
  });
});
