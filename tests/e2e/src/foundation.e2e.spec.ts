import type { SystemCheckReport } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { Stack } from './support/stack';

const MAX_BODY_BYTES = 64 * 1024;

describe('the stack, end to end over HTTP', () => {
  let stack: Stack;
  let key: string;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });
    key = (await stack.createKey('acme')).key;
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  async function systemCheck(): Promise<{ status: number; body: SystemCheckReport }> {
    const res = await stack.fetch('/v1/system-check');
    return { status: res.status, body: (await res.json()) as SystemCheckReport };
  }

  describe('health', () => {
    it('answers /v1/health without a key', async () => {
      const res = await stack.fetch('/v1/health');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });

    it('reports every component ok, with the workers and their compute backend', async () => {
      const { status, body } = await waitFor(async () => {
        const check = await systemCheck();
        return check.status === 200 && check;
      }, { what: 'system-check to be green', timeoutMs: 20_000 });
      expect(status).toBe(200);
      expect(body.status).toBe('ok');
      expect(body.failing).toEqual([]);
      expect(Object.keys(body.components).sort()).toEqual(
        [
          'api',
          'chat',
          'database',
          'health',
          'inference-queue',
          'inference-workers',
          'model-registry',
          'nats',
          'training-orchestrator',
          'training-queue',
          'training-workers',
        ].sort(),
      );
      for (const component of Object.values(body.components)) {
        expect(component).toMatchObject({ ok: true, error: null, latency_ms: expect.any(Number) });
      }
      expect(body.components['inference-workers']).toMatchObject({ count: 1, backend: 'wasm' });
      expect(body.components['training-workers']).toMatchObject({ count: 1, backend: 'wasm' });
    });
  });

  describe('authentication', () => {
    it.each([
      ['no Authorization header', undefined, /^Missing API key/],
      ['a non-bearer scheme', 'Basic dXNlcjpwYXNz', /^Malformed Authorization header/],
      ['an unknown key', 'Bearer ty_not-a-real-key', /^Unknown API key$/],
    ])('refuses %s with a 401 JSON body that says why', async (_, authorization, message) => {
      const res = await stack.fetch('/v1/preview/base-models', { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      const body = (await res.json()) as { detail: string };
      expect(body.detail).toMatch(message);
    });

    it('lets a valid key in', async () => {
      stack.addBaseModel('acme-org/tiny-chat');
      stack.addBaseModel('flat-model', { model_type: 'qwen2' });
      const res = await stack.fetch('/v1/preview/base-models', { key });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(['acme-org/tiny-chat', 'flat-model']);
    });

    it('stops accepting a key the moment it is revoked', async () => {
      const created = await stack.createKey('acme');
      expect((await stack.fetch('/v1/preview/base-models', { key: created.key })).status).toBe(200);

      const revoked = await stack.keys('revoke', created.id);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toContain(`Revoked ${created.id}`);

      const res = await stack.fetch('/v1/preview/base-models', { key: created.key });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/was revoked$/);
      expect((await stack.fetch('/v1/preview/base-models', { key })).status).toBe(200);
    });

    it('lists keys by prefix and never prints a secret again', async () => {
      const { stdout } = await stack.keys('list', '--entity', 'acme');
      expect(stdout).toContain(key.slice(0, 10));
      expect(stdout).not.toContain(key);
    });
  });

  describe('HTTP edge', () => {
    it('answers an unknown route with a JSON 404 naming it', async () => {
      const res = await stack.fetch('/v1/no-such-thing', { key });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: 'No route for GET /v1/no-such-thing' });
    });

    it('puts an x-request-id on every response, keeping a sane one the caller sent', async () => {
      const generated = await stack.fetch('/v1/no-such-thing');
      expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      const echoed = await stack.fetch('/v1/health', { headers: { 'x-request-id': 'trace-42' } });
      expect(echoed.headers.get('x-request-id')).toBe('trace-42');
      const replaced = await stack.fetch('/v1/health', { headers: { 'x-request-id': 'bad id with spaces' } });
      expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces');
    });

    it('refuses a body over the limit with 413, in the envelope of the route family', async () => {
      const body = JSON.stringify({ padding: 'x'.repeat(MAX_BODY_BYTES + 1) });
      const headers = { 'content-type': 'application/json' };
      const preview = await stack.fetch('/v1/preview/models', { method: 'POST', body, headers, key });
      expect(preview.status).toBe(413);
      expect(((await preview.json()) as { detail: string }).detail).toBe(`Request body is larger than the limit of ${MAX_BODY_BYTES} bytes`);

      const chat = await stack.fetch('/v1/chat/completions', { method: 'POST', body, headers, key });
      expect(chat.status).toBe(413);
      expect(((await chat.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    });

    it('refuses malformed JSON with a 422 that says so', async () => {
      const res = await stack.fetch('/v1/preview/models', {
        method: 'POST',
        body: '{"name": ',
        headers: { 'content-type': 'application/json' },
        key,
      });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: string[]; type: string }[] };
      expect(body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    });
  });

  describe('when a part stops', () => {
    it('names the stopped service in a 503 system-check, and is green again once it is back', async () => {
      await stack.stopApp('model-registry');

      const down = await systemCheck();
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('failing');
      expect(down.body.failing).toEqual(['model-registry']);
      expect(down.body.components['model-registry'].error).toMatch(/not running|no responders/);

      const routed = await stack.fetch('/v1/preview/base-models', { key });
      expect(routed.status).toBe(503);
      expect(routed.headers.get('retry-after')).toBe('1');

      await stack.startApp('model-registry');
      const up = await waitFor(async () => {
        const check = await systemCheck();
        return check.status === 200 && check;
      }, { what: 'system-check to be green again', timeoutMs: 20_000 });
      expect(up.body.failing).toEqual([]);
    });

    it('reports a stopped worker kind, and only that', async () => {
      await stack.stopApp('training-worker');
      const down = await systemCheck();
      expect(down.status).toBe(503);
      expect(down.body.failing).toEqual(['training-workers']);
      expect(down.body.components['training-workers'].error).toBe('no training worker is running');
      await stack.startApp('training-worker');
      await waitFor(async () => (await systemCheck()).status === 200, { what: 'green again', timeoutMs: 20_000 });
    });

    it('still answers system-check with 503 when the health service itself is down', async () => {
      await stack.stopApp('health');
      const down = await systemCheck();
      expect(down.status).toBe(503);
      expect(down.body.components['api'].ok).toBe(true);
      expect(down.body.components['health'].ok).toBe(false);
      expect(down.body.failing).toContain('health');
      await stack.startApp('health');
      await waitFor(async () => (await systemCheck()).status === 200, { what: 'green again', timeoutMs: 20_000 });
    });

    it('exits cleanly on SIGTERM', async () => {
      expect(await stack.stopApp('chat')).toBe(0);
      await stack.startApp('chat');
    });
  });
});
