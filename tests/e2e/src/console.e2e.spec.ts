import type { CheckpointRecord, Page as ListPage, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/browser';
import { Stack } from './support/stack';

// The web console in a real browser (headless Chromium) against the whole stack: sign-in,
// account settings (keys made, used through the API, revoked), models and checkpoints, a
// training job followed live and cancelled, the playground. Every page is photographed into
// tmp/console-screenshots.

const BASE = 'trainyard/tiny-chat';
const ROOT = join(__dirname, '../../..');
const SHOTS = join(ROOT, 'tmp/console-screenshots');

interface Trajectory {
  messages_and_choices: unknown[];
  reward: number;
}

describe('the web console, in a browser', () => {
  let stack: Stack;
  let key: string;
  let otherKey: { key: string; id: string };
  let browser: { context: BrowserContext; close(): Promise<void> };
  let page: Page;
  let model: { id: string; entity: string; project: string; name: string };
  let rollouts: Trajectory[];
  const pageProblems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist/apps/console/index.html'))) throw new Error('dist/apps/console is missing: build first (npx nx run-many -t build)');
    stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '64' } });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    otherKey = await stack.createKey('globex');
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (err) => pageProblems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) pageProblems.push(`CSP: ${msg.text()}`);
    });
    mkdirSync(SHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 60_000);

  const consoleUrl = (path = '') => `${stack.baseUrl}/console/${path}`;
  const shoot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, as = key) => stack.call<T>(method, path, { key: as, body });

  /** Navigates inside the already loaded console, as a click on its navigation would. */
  async function openSection(label: string): Promise<void> {
    await page.getByRole('link', { name: label, exact: true }).click();
  }

  async function waitForJobEnd(jobId: string): Promise<TrainingEventRecord[]> {
    for (let i = 0; i < 900; i++) {
      const { body } = await api<ListPage<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`);
      if (body.data.some((e) => e.type === 'training_ended' || e.type === 'training_failed')) return body.data;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`job ${jobId} did not end`);
  }

  async function allEvents(jobId: string): Promise<TrainingEventRecord[]> {
    const events: TrainingEventRecord[] = [];
    for (;;) {
      const after = events.at(-1)?.id;
      const { body } = await api<ListPage<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100${after ? `&after=${after}` : ''}`);
      events.push(...body.data);
      if (!body.has_more) return events;
    }
  }

  async function signInByApi(secret: string): Promise<{ cookie: string; csrf: string }> {
    const res = await fetch(`${stack.baseUrl}/console/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: secret }),
    });
    expect(res.status).toBe(200);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('trainyard_console='));
    expect(cookie).toBeDefined();
    return { cookie: (cookie as string).split(';')[0], csrf: ((await res.json()) as { csrf_token: string }).csrf_token };
  }

  it('refuses a bad key at sign-in, setting no session', async () => {
    await page.goto(consoleUrl());
    await page.getByTestId('sign-in-key').fill('ty_not-a-real-key');
    await page.getByTestId('sign-in-submit').click();
    const error = page.getByTestId('sign-in-error');
    await error.waitFor();
    expect(await error.textContent()).toContain('Unknown API key');
    expect((await browser.context.cookies()).filter((c) => c.name === 'trainyard_console')).toEqual([]);
    await shoot('sign-in');
  });

  it('signs in with a key; the session is an httpOnly SameSite cookie and nothing secret is in storage or the URL', async () => {
    await page.getByTestId('sign-in-key').fill(key);
    await page.getByTestId('sign-in-submit').click();
    await page.getByTestId('signed-in-entity').filter({ hasText: 'acme' }).waitFor();

    const [session] = (await browser.context.cookies()).filter((c) => c.name === 'trainyard_console');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    // Page-side expressions as strings: this file is compiled without the DOM's types (and the
    // page's CSP allows these, as the DevTools protocol evaluates them, not the page's eval).
    const visible = {
      cookie: await page.evaluate<string>('document.cookie'),
      storage: await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })'),
      url: page.url(),
    };
    for (const secret of [key, session.value]) {
      expect(visible.cookie).not.toContain(secret);
      expect(visible.storage).not.toContain(secret);
      expect(visible.url).not.toContain(secret);
    }

    // A reload keeps the session (the cookie) and fetches the CSRF token again.
    await page.reload();
    await page.getByTestId('signed-in-entity').filter({ hasText: 'acme' }).waitFor();
  });

  it('creates a key shown once that works on the API, lists it without its secret, and revokes it so the API refuses it', async () => {
    await openSection('Account settings');
    await page.getByTestId('new-key-name').fill('ci key');
    await page.getByTestId('create-key').click();
    const secretBox = page.getByTestId('new-key-secret');
    await secretBox.waitFor();
    const secret = ((await secretBox.textContent()) ?? '').trim();
    expect(secret).toMatch(/^ty_[A-Za-z0-9_-]{43}$/);

    expect((await api('GET', '/v1/preview/base-models', undefined, secret)).status).toBe(200);

    const row = page.locator('[data-testid="key-row"][data-key-name="ci key"]');
    await row.waitFor();
    const rowText = (await row.textContent()) ?? '';
    expect(rowText).toContain(secret.slice(0, 10));
    expect(rowText).not.toContain(secret);
    expect(rowText).toContain('active');
    await shoot('account-settings');

    // The secret is gone from the page after a reload: it was shown once.
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(secret);

    await row.getByTestId('revoke-key').click();
    await page.getByTestId('confirm').click();
    await row.getByTestId('key-status').filter({ hasText: 'revoked' }).waitFor();

    const refused = await api<{ detail: string }>('GET', '/v1/preview/base-models', undefined, secret);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/revoked/);
    // The key the console signed in with still works, and so does the console.
    expect((await api('GET', '/v1/preview/base-models')).status).toBe(200);
    await shoot('account-settings-revoked');
  });

  it("guards the console's session API: CSRF on changes, sessions only, each entity its own keys", async () => {
    const { cookie, csrf } = await signInByApi(key);
    const consoleCall = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
      fetch(`${stack.baseUrl}/console/api/${path}`, {
        method,
        headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    expect((await consoleCall('GET', 'keys')).status).toBe(200);
    expect((await consoleCall('POST', 'keys', {}, { name: 'forged' })).status).toBe(403);
    expect((await consoleCall('POST', 'keys', { 'x-csrf-token': 'forged' }, { name: 'forged' })).status).toBe(403);
    // The same holds on the public API when the cookie is the credential.
    const forgedModel = await fetch(`${stack.baseUrl}/v1/preview/models`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ entity: null, project: 'csrf', name: 'forged', base_model: BASE }),
    });
    expect(forgedModel.status).toBe(403);
    expect((await fetch(`${stack.baseUrl}/v1/preview/models`, { headers: { cookie } })).status).toBe(200);

    // Another entity's key is not found, and stays working.
    const foreign = await consoleCall('DELETE', `keys/${otherKey.id}`, { 'x-csrf-token': csrf });
    expect(foreign.status).toBe(404);
    expect((await api('GET', '/v1/preview/base-models', undefined, otherKey.key)).status).toBe(200);

    // A bearer key is not a console session.
    expect((await stack.call('GET', '/console/api/keys', { key })).status).toBe(401);
    // A sign-in must be JSON: a cross-site form cannot sign anyone in.
    const form = await fetch(`${stack.baseUrl}/console/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `key=${encodeURIComponent(key)}`,
    });
    expect(form.status).toBe(400);

    // Signing out ends the session on the server, not only in the browser.
    expect((await consoleCall('DELETE', 'session', { 'x-csrf-token': csrf })).status).toBe(200);
    expect((await consoleCall('GET', 'keys')).status).toBe(401);
  });

  it('lists models with base model, newest step and metrics, and deletes a checkpoint after asking', async () => {
    model = (await api<typeof model>('POST', '/v1/preview/models', { entity: null, project: 'art', name: 'agent', base_model: BASE, return_existing: true })).body;
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    const modelName = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
    rollouts = [];
    for (const prompt of ['Count to three.', 'Name a colour.']) {
      for (let i = 0; i < 4; i++) {
        const messages = [{ role: 'user' as const, content: prompt }];
        // @ts-expect-error ART's extension, sent as an extra body field
        const completion = await client.chat.completions.create({ model: modelName, messages, max_tokens: 8, temperature: 1, logprobs: true, return_token_ids: true });
        rollouts.push({ messages_and_choices: [...messages, completion.choices[0]], reward: i });
      }
    }
    const groups = [{ trajectories: rollouts.slice(0, 4) }, { trajectories: rollouts.slice(4) }];
    const job = await api<{ id: string }>('POST', '/v1/preview/training-jobs', { model_id: model.id, trajectory_groups: groups });
    expect(job.status).toBe(200);
    expect((await waitForJobEnd(job.body.id)).at(-1)?.type).toBe('training_ended');
    expect((await api('POST', `/v1/preview/models/${model.id}/log`, { split: 'val', trajectory_groups: groups })).status).toBe(200);

    await openSection('Models');
    const row = page.locator(`[data-testid="model-row"][data-model-id="${model.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('art/agent');
    expect(await row.textContent()).toContain(BASE);
    expect(await row.getByTestId('model-newest-step').textContent()).toBe('1');
    expect(await row.textContent()).toContain('val/reward');
    await shoot('models');

    await row.getByRole('link', { name: 'art/agent' }).click();
    const step0 = page.locator('[data-testid="checkpoint-row"][data-step="0"]');
    await step0.waitFor();
    await page.locator('[data-testid="checkpoint-row"][data-step="1"]').filter({ hasText: 'val/reward' }).waitFor();
    await page.getByTestId('job-row').first().waitFor();
    await shoot('model');

    // Asked first: keeping it changes nothing.
    await step0.getByTestId('delete-checkpoint').click();
    await page.getByRole('button', { name: 'Keep it' }).click();
    const steps = async () => (await api<ListPage<CheckpointRecord>>('GET', `/v1/preview/models/${model.id}/checkpoints`)).body.data.map((c) => c.step);
    expect(await steps()).toEqual([0, 1]);

    await step0.getByTestId('delete-checkpoint').click();
    await page.getByTestId('confirm').click();
    await step0.waitFor({ state: 'detached' });
    expect(await steps()).toEqual([1]);
  }, 300_000);

  it('follows a running job live, its charts gaining points, and cancels it from the page', async () => {
    // One gradient step per trajectory, thousands of them: minutes of training on the tiny
    // model where the page cancels it seconds after its first steps. A job that ended first
    // would take the cancel dialog with it (the page offers cancelling only while active).
    const groups = Array.from({ length: 512 }, (_, g) => ({ trajectories: rollouts.map((t, i) => ({ ...t, reward: (i + g) % 3 })) }));
    const job = await api<{ id: string }>('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: groups,
      experimental_config: { packed_sequence_length: 1 },
    });
    expect(job.status).toBe(200);
    const jobId = job.body.id;
    // The list the jobs page shows: newest first, the caller's own only.
    expect((await api<ListPage<TrainingJobRecord>>('GET', '/v1/preview/training-jobs?limit=1')).body).toMatchObject({ data: [{ id: jobId }], has_more: true });
    expect((await api<ListPage<TrainingJobRecord>>('GET', `/v1/preview/training-jobs?model_id=${model.id}`, undefined, otherKey.key)).body.data).toEqual([]);

    await openSection('Training jobs');
    const row = page.locator(`[data-testid="job-row"][data-job-id="${jobId}"]`);
    await row.waitFor();
    await shoot('jobs');
    await row.getByRole('link', { name: jobId.slice(0, 8) }).click();

    const points = () => page.getByTestId('chart-loss').getAttribute('data-points').then(Number);
    /** Polls the loss chart's point count until `condition` holds (the page's CSP forbids string predicates). */
    async function chartPoints(condition: (n: number) => boolean, timeoutMs = 180_000): Promise<number> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const n = await points();
        if (condition(n)) return n;
        if (Date.now() > deadline) throw new Error(`the loss chart stayed at ${n} points`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const first = await chartPoints((n) => n >= 1);
    await chartPoints((n) => n > first);
    expect(await points()).toBeGreaterThan(first);
    expect(await page.getByTestId('job-status').textContent()).toBe('running');
    expect(await page.getByTestId('job-steps').textContent()).toMatch(/^\d+ \/ \d+ gradient steps$/);
    for (const metric of ['reward', 'grad_norm', 'learning_rate']) expect(Number(await page.getByTestId(`chart-${metric}`).getAttribute('data-points'))).toBeGreaterThan(0);
    await shoot('job-running');

    await page.getByTestId('cancel-job').click();
    await page.getByTestId('confirm').click();
    await page.getByTestId('job-status').filter({ hasText: 'cancelled' }).waitFor({ timeout: 120_000 });
    expect((await api<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`)).body.status).toBe('cancelled');
    expect(await page.getByTestId('job-error').textContent()).toContain('cancelled');

    // The stream has ended: the chart holds every step the job made, each drawn as a point.
    const made = (await allEvents(jobId)).filter((e) => e.type === 'gradient_step').length;
    await chartPoints((n) => n === made, 30_000);
    expect(await page.locator('[data-testid="chart-loss"] .recharts-line-dot').count()).toBe(made);
    expect(await page.getByTestId('cancel-job').count()).toBe(0);
    await shoot('job-cancelled');
  }, 300_000);

  it('sends a chat completion from the playground to a checkpoint, in JSON mode, showing the served step, tokens and logprobs', async () => {
    await openSection('Playground');
    const picker = page.getByTestId('playground-model');
    await picker.click();
    await page.getByRole('option', { name: 'art/agent step 1', exact: true }).click();
    await page.getByTestId('playground-message').fill('Describe a cat as JSON.');
    await page.getByTestId('playground-json').check();
    await page.getByTestId('playground-send').click();

    const served = page.getByTestId('served-step');
    await served.waitFor({ timeout: 60_000 });
    expect(await served.textContent()).toBe('1');
    const content = (await page.getByTestId('completion-content').textContent()) ?? '';
    expect(() => JSON.parse(content)).not.toThrow();
    expect(await page.getByTestId('usage').textContent()).toMatch(/Tokens: \d+ prompt, \d+ completion, \d+ total/);
    expect(await page.locator('[data-testid="logprobs"] tbody tr').count()).toBeGreaterThan(0);
    await shoot('playground');
  }, 120_000);

  describe('a model trained over several steps', () => {
    let run: { id: string };
    let quietJob: string;
    const toolTrajectory = (reward: number) => ({
      reward,
      metrics: { turns: 2 },
      messages_and_choices: [
        { role: 'user', content: 'What is the weather in Oslo?' },
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_oslo', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
          logprobs: { content: [{ token: '<tool_call>', logprob: -0.5 }] },
        },
        { role: 'tool', tool_call_id: 'call_oslo', content: 'Light rain, 7 degrees' },
      ],
    });
    const logStep = async (step: number) => {
      const train = [{ trajectories: [toolTrajectory(step), { reward: step + 1, metrics: { turns: 1 } }] }];
      expect((await api('POST', `/v1/preview/models/${run.id}/log`, { split: 'train', trajectory_groups: train })).status).toBe(200);
      expect((await api('POST', `/v1/preview/models/${run.id}/log`, { split: 'val', trajectory_groups: [{ trajectories: [{ reward: step / 2 }] }] })).status).toBe(200);
    };
    /** A job whose groups all have equal rewards: no gradient step, yet a new checkpoint. */
    const equalRewardsJob = async () => {
      const job = await api<{ id: string }>('POST', '/v1/preview/training-jobs', { model_id: run.id, trajectory_groups: [{ trajectories: rollouts.map((t) => ({ ...t, reward: 1 })) }] });
      expect(job.status).toBe(200);
      expect((await waitForJobEnd(job.body.id)).at(-1)?.type).toBe('training_ended');
      return job.body.id;
    };
    /** Polls an attribute until `condition` holds (the page's CSP forbids string predicates). */
    async function attributeUntil(testId: string, name: string, condition: (value: string | null) => boolean, timeoutMs = 60_000): Promise<string | null> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await page.getByTestId(testId).getAttribute(name).catch(() => null);
        if (condition(value)) return value;
        if (Date.now() > deadline) throw new Error(`${testId} ${name} stayed ${value}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const chartNames = async () => {
      const { body } = await api<ListPage<CheckpointRecord>>('GET', `/v1/preview/models/${run.id}/checkpoints?limit=100`);
      const names = new Set<string>();
      for (const c of body.data) for (const key of Object.keys(c.metrics)) names.add(key.includes('/') ? key.slice(key.indexOf('/') + 1) : key);
      return [...names];
    };

    it('charts every logged metric across the steps, one line per split', async () => {
      run = (await api<{ id: string }>('POST', '/v1/preview/models', { entity: null, project: 'art', name: 'run', base_model: BASE, return_existing: true })).body;
      await logStep(0);
      const trained = await api<{ id: string }>('POST', '/v1/preview/training-jobs', {
        model_id: run.id,
        trajectory_groups: [{ trajectories: rollouts.slice(0, 4) }, { trajectories: rollouts.slice(4) }],
      });
      expect((await waitForJobEnd(trained.body.id)).at(-1)?.type).toBe('training_ended');
      await logStep(1);
      quietJob = await equalRewardsJob();
      await logStep(2);

      await openSection('Models');
      await page.locator(`[data-testid="model-row"][data-model-id="${run.id}"]`).getByRole('link', { name: 'art/run' }).click();
      await page.getByTestId('run-charts').waitFor();
      const names = await chartNames();
      expect(names).toEqual(expect.arrayContaining(['reward', 'reward_std_dev', 'exception_rate', 'turns', 'loss', 'grad_norm']));
      for (const name of names) await page.getByTestId(`run-chart-${name}`).waitFor();
      expect(await page.locator('[data-testid^="run-chart-"]').count()).toBe(names.length);
      const reward = page.getByTestId('run-chart-reward');
      // The client's train/ and val/ rewards and the training job's own mean reward (training/).
      expect(await reward.getAttribute('data-splits')).toBe('train,training,val');
      expect(await reward.getAttribute('data-steps')).toBe('0,1,2');
      expect(await page.getByTestId('run-chart-loss').getAttribute('data-splits')).toBe('training');
      expect(await page.getByTestId('run-chart-loss').getAttribute('data-steps')).toBe('1');
      // A line per split, a dot per step it has a value at.
      expect(await reward.locator('.recharts-line').count()).toBe(3);
      expect(await reward.locator('.recharts-line-dot').count()).toBe(7);
      // Hovering shows the values of that step.
      await reward.locator('.recharts-surface').hover();
      await reward.locator('.recharts-tooltip-wrapper').filter({ hasText: 'val' }).waitFor();
      // The smoothing control smooths every chart.
      expect(await reward.getAttribute('data-smoothing')).toBe('0');
      await page.getByTestId('chart-smoothing').click();
      // The page re-renders after the click: wait for the chart to say so (times out if it never does).
      await attributeUntil('run-chart-reward', 'data-smoothing', (value) => Number(value) > 0);
      await shoot('model-charts');
      // The charts alone, from the top of the page, where the console's header does not cover them.
      await page.evaluate('window.scrollTo(0, 0)');
      const box = await page.getByTestId('run-charts').boundingBox();
      const fourthRow = await page.locator('[data-testid^="run-chart-"]').nth(7).boundingBox();
      if (box && fourthRow) await page.screenshot({ path: join(SHOTS, 'run-charts.png'), fullPage: true, clip: { ...box, height: fourthRow.y + fourthRow.height - box.y } });
    }, 600_000);

    it('draws a new checkpoint on the charts without a reload, and a deleted one as a gap', async () => {
      await page.evaluate('window.__sameDocument = true');
      await equalRewardsJob();
      await logStep(3);
      await attributeUntil('run-chart-reward', 'data-steps', (v) => v === '0,1,2,3');
      expect(await page.evaluate<boolean>('window.__sameDocument === true')).toBe(true);

      expect((await api('DELETE', `/v1/preview/models/${run.id}/checkpoints`, { steps: [1] })).status).toBe(200);
      await attributeUntil('run-chart-reward', 'data-steps', (v) => v === '0,2,3');
      // Step 1 is still on the axis, with no value: each split's line breaks there rather than joining 0 to 2.
      expect(await page.getByTestId('run-chart-reward').locator('.recharts-line-dot').count()).toBe(6);
      expect(await page.getByTestId('run-chart-loss').count()).toBe(0);
    }, 300_000);

    it("shows a logged trajectory's turns, tool call and tool result, filtered by split, step and reward", async () => {
      const rolloutsPanel = page.getByTestId('rollouts');
      await page.getByTestId('rollouts-split').click();
      await page.getByRole('option', { name: 'train', exact: true }).click();
      await page.getByTestId('rollouts-step').click();
      await page.getByRole('option', { name: '0', exact: true }).click();
      const card = rolloutsPanel.getByTestId('trajectory').filter({ hasText: 'What is the weather in Oslo?' });
      const others = rolloutsPanel.locator('[data-testid="rollout-group"]:not([data-step="0"][data-split="train"])');
      for (const deadline = Date.now() + 30_000; (await others.count()) > 0 || (await card.count()) !== 1; ) {
        if (Date.now() > deadline) throw new Error('the rollouts were not filtered to train at step 0');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await card.getByTestId('tool-call').textContent()).toContain('get_weather({"city":"Oslo"})');
      expect(await card.locator('[data-testid="trajectory-turn"][data-role="tool"]').textContent()).toContain('Light rain, 7 degrees');
      expect(await card.getByTestId('trajectory-reward').textContent()).toBe('reward 0');
      await card.getByTestId('toggle-logprobs').click();
      expect(await card.getByTestId('trajectory-logprobs').textContent()).toContain('<tool_call>');
      for (const group of await rolloutsPanel.getByTestId('rollout-group').all()) {
        expect(await group.getAttribute('data-split')).toBe('train');
        expect(await group.getAttribute('data-step')).toBe('0');
      }
      await shoot('model-rollouts');
      await card.screenshot({ path: join(SHOTS, 'rollout.png') });

      await page.getByTestId('rollouts-min-reward').fill('1');
      await card.waitFor({ state: 'detached' });
      const shown = await rolloutsPanel.getByTestId('trajectory').all();
      expect(shown.length).toBeGreaterThan(0);
      for (const t of shown) expect(Number(await t.getAttribute('data-reward'))).toBeGreaterThanOrEqual(1);
    }, 120_000);

    it('explains a job that made no gradient step, linking to its checkpoint and its rollouts', async () => {
      const record = (await api<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${quietJob}`)).body;
      expect(record.no_gradient_steps_reason).toContain('equal rewards');
      await page.goto(consoleUrl(`jobs/${quietJob}`));
      const reason = page.getByTestId('job-no-steps');
      await reason.waitFor();
      expect(await reason.textContent()).toContain('Every group had equal rewards');
      // The step count appears once the job's events are read (the reason comes with the job record).
      // A locator's wait, not waitForFunction: the page's CSP forbids the eval a string predicate polls with.
      await page.getByTestId('job-steps').filter({ hasText: /^0 \/ 0 gradient steps$/ }).waitFor();
      expect(await page.getByTestId('job-checkpoint').textContent()).toBe(`checkpoint step ${record.checkpoint_step}`);
      await shoot('job-no-steps');

      await page.getByTestId('job-rollouts').click();
      await page.getByTestId('rollouts-clear-job').waitFor();
      const groups = page.getByTestId('rollout-group');
      await groups.first().waitFor();
      expect(await page.getByTestId('trajectory').count()).toBe(rollouts.length);
      for (const group of await groups.all()) expect(await group.textContent()).toContain(`trained by job ${quietJob.slice(0, 8)}`);
    }, 120_000);

    it('sends one prompt to two checkpoints from the playground, side by side', async () => {
      await openSection('Playground');
      // The choices are loaded once the model field shows one.
      const picker = page.getByTestId('playground-model');
      for (const deadline = Date.now() + 30_000; !(await picker.inputValue()); ) {
        if (Date.now() > deadline) throw new Error('the playground never showed a model');
        await new Promise((r) => setTimeout(r, 100));
      }
      await page.getByTestId('playground-compare').check();
      await picker.click();
      await page.getByRole('option', { name: 'art/run step 0', exact: true }).click();
      await page.getByTestId('playground-model-b').click();
      await page.getByRole('option', { name: 'art/run step 3', exact: true }).click();
      await page.getByTestId('playground-message').fill('Say hello.');
      await page.getByTestId('playground-send').click();
      await page.getByTestId('comparison').waitFor({ timeout: 60_000 });
      const a = page.getByTestId('compare-a');
      const b = page.getByTestId('compare-b');
      expect(await a.getByTestId('served-step').textContent()).toBe('0');
      expect(await b.getByTestId('served-step').textContent()).toBe('3');
      expect(await a.textContent()).toContain('art/run step 0');
      expect(await b.textContent()).toContain('art/run step 3');
      for (const side of [a, b]) expect(await side.getByTestId('usage').textContent()).toMatch(/Tokens: \d+ prompt, \d+ completion, \d+ total/);
      await shoot('playground-compare');
    }, 120_000);
  });

  it('signs out: the session ends on the server and the sign-in page is back', async () => {
    const [session] = (await browser.context.cookies()).filter((c) => c.name === 'trainyard_console');
    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in-key').waitFor();
    const reused = await fetch(`${stack.baseUrl}/v1/preview/models`, { headers: { cookie: `trainyard_console=${session.value}` } });
    expect(reused.status).toBe(401);
    expect((await browser.context.cookies()).filter((c) => c.name === 'trainyard_console')).toEqual([]);
  });

  it('raised no page errors and broke no Content Security Policy rule', () => {
    expect(pageProblems).toEqual([]);
  });
});
