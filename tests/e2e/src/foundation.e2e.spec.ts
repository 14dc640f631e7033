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
      // Each worker as it reported itself; a WebGPU adapter only on webgpu.
      for (const kind of ['inference-workers', 'training-workers']) {
        expect(body.components[kind]['workers']).toEqual([expect.objectContaining({ backend: 'wasm', gpu: false, adapter: null, ready: true })]);
      }
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

    describe('with verified keys served from memory', () => {
      const base = '/v1/preview/base-models';
      const detail = async (res: Response) => ((await res.json()) as { detail: string }).detail;
      /** Used more than once, so that the gateway has it in memory when the change comes. */
      async function usedKey(entity: string): Promise<{ key: string; id: string }> {
        const created = await stack.createKey(entity);
        for (let i = 0; i < 3; i++) expect((await stack.fetch(base, { key: created.key })).status).toBe(200);
        return created;
      }
      /**
       * A change made by another process reaches the gateway as a PostgreSQL notification: the
       * first answer after it, asked for until 2 s have passed (the cache's TTL is 60 s, so
       * only the notification can bring it). The request sent the instant the change commits
       * can still be ahead of the notification (docs/reliability.md, the key cache).
       */
      async function firstAnswerAfterChange(key: string, accepts: (res: Response) => boolean = (res) => res.status === 200): Promise<Response> {
        const deadline = Date.now() + 2_000;
        for (;;) {
          const res = await stack.fetch(base, { key });
          if (!accepts(res) || Date.now() > deadline) return res;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }

      it('does serve them from memory: a revocation the database does not announce goes unnoticed', async () => {
        // Proves the cache is in the path, so that the tests below show that its invalidation works.
        const created = await usedKey('cache-proof');
        await stack.withDatabase(async (db) => {
          await db.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_changes_notify_update');
          try {
            await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [created.id]);
          } finally {
            await db.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_changes_notify_update');
          }
        });
        for (let i = 0; i < 3; i++) expect((await stack.fetch(base, { key: created.key })).status).toBe(200);
        // Any announced change to the row (here its name) drops it, and the revocation shows.
        await stack.withDatabase((db) => db.query("UPDATE api_keys SET name = 'renamed' WHERE id = $1", [created.id]));
        const res = await firstAnswerAfterChange(created.key);
        expect(res.status).toBe(401);
        expect(await detail(res)).toMatch(/was revoked$/);
      });

      it('refuses one on the very next request after the key command revokes it from another process', async () => {
        const created = await usedKey('cache-cli');
        const other = await usedKey('cache-cli');
        const revoked = await stack.keys('revoke', created.key.slice(0, 10));
        expect(revoked.stdout).toContain(`Revoked ${created.id}`);
        const res = await stack.fetch(base, { key: created.key });
        expect(res.status).toBe(401);
        expect(await detail(res)).toMatch(/was revoked$/);
        expect((await stack.fetch(base, { key: other.key })).status).toBe(200);
      });

      it('refuses one on the very next request after the console revokes it', async () => {
        const signInKey = await usedKey('cache-console');
        const doomed = await usedKey('cache-console');
        const signIn = await stack.fetch('/console/api/session', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key: signInKey.key }),
        });
        expect(signIn.status).toBe(200);
        const cookie = (signIn.headers.getSetCookie().find((c) => c.startsWith('trainyard_console=')) as string).split(';')[0];
        const csrf = ((await signIn.json()) as { csrf_token: string }).csrf_token;

        const revoke = await stack.fetch(`/console/api/keys/${doomed.id}`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf } });
        expect(revoke.status).toBe(200);
        const res = await stack.fetch(base, { key: doomed.key });
        expect(res.status).toBe(401);
        expect(await detail(res)).toMatch(/was revoked$/);
        expect((await stack.fetch(base, { key: signInKey.key })).status).toBe(200);
      });

      it('refuses one as soon as its row is revoked in SQL: the trigger tells, not the gateway', async () => {
        const created = await usedKey('cache-sql');
        await stack.withDatabase((db) => db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [created.id]));
        const res = await firstAnswerAfterChange(created.key);
        expect(res.status).toBe(401);
        expect(await detail(res)).toMatch(/was revoked$/);
      });

      it('refuses one as soon as its entity is deleted in SQL', async () => {
        const created = await usedKey('cache-deleted');
        await stack.withDatabase((db) => db.query("DELETE FROM entities WHERE name = 'cache-deleted'"));
        const res = await firstAnswerAfterChange(created.key);
        expect(res.status).toBe(401);
        expect(await detail(res)).toBe('Unknown API key');
      });

      it('acts for the new name as soon as its entity is renamed in SQL', async () => {
        const created = await usedKey('cache-old-name');
        await stack.withDatabase((db) => db.query("UPDATE entities SET name = 'cache-new-name' WHERE name = 'cache-old-name'"));
        const createElsewhere = () =>
          stack.call<{ detail: string }>('POST', '/v1/preview/models', {
            key: created.key,
            body: { entity: 'someone-else', project: 'p', name: 'm', base_model: 'acme-org/tiny-chat' },
          });
        const deadline = Date.now() + 2_000;
        let res = await createElsewhere();
        while (res.body.detail.includes('"cache-old-name"') && Date.now() < deadline) res = await createElsewhere();
        expect(res.status).toBe(403);
        expect(res.body.detail).toContain('belongs to entity "cache-new-name"');
      });
    });

    it('lists keys by prefix and never prints a secret again', async () => {
      const { stdout } = await stack.keys('list', '--entity', 'acme');
      expect(stdout).toContain(key.slice(0, 10));
      expect(stdout).not.toContain(key);
    });

    it('prints its usage for --help, and names an unknown option without a stack trace', async () => {
      const help = await stack.keys('--help');
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage:\n {2}keys create --entity/);
      const unknown = await stack.keys('list', '--bogus');
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/^Unknown option '--bogus'\n\nUsage:/);
      expect(unknown.stderr).not.toMatch(/\n\s+at /);
    });
  });

  describe('HTTP edge', () => {
    it('answers an unknown route with a JSON 404 naming it, in the envelope of its family', async () => {
      const res = await stack.fetch('/v1/no-such-thing', { key });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: { message: 'No route for GET /v1/no-such-thing', type: 'not_found_error', param: null, code: 'not_found' } });
      const preview = await stack.fetch('/v1/preview/no-such-thing', { key });
      expect(preview.status).toBe(404);
      expect(await preview.json()).toEqual({ detail: 'No route for GET /v1/preview/no-such-thing' });
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
