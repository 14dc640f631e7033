import type { CheckpointRecord, Page, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { mapArtTrajectoryGroups, validateExperimentalConfig, validateSftConfig, validateSftExperimentalConfig } from '@trainyard/art';
import { waitFor } from '@trainyard/testing';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Answer, check, filesUnder, HostileRequest, multipart, Part, send, sendRaw, storedState, Tally, Verdict } from './support/hostile-http';
import { Stack } from './support/stack';

// Hostile input, property-based: every route of the gateway gets malformed JSON, wrong
// types, huge strings and arrays, deep nesting, unicode edge cases, negative and enormous
// numbers, path traversal in ids and file names, oversized and malformed multipart, and
// bytes no HTTP library would send. Every answer must be a 2xx (only where the input
// happens to be valid) or a 4xx JSON error naming the problem; never a 5xx. Afterwards
// every process is still running and the stored data (every table, every artifact file) is
// exactly as before.
//
// Requests are built so that the only hostile thing in each is the generated part: one
// field of an otherwise valid body, one path id, one query parameter, one header. Inputs
// that would be valid on a route that changes data (a new model name, a valid training
// job) are never generated, so that "nothing changed" is an assertion, not a hope.
//
// Runs are reproducible: FUZZ_SEED=<n> replays a run, FUZZ_SCALE=<x> multiplies the run counts.

const SEED = Number(process.env['FUZZ_SEED'] ?? 20_251_109);
const SCALE = Number(process.env['FUZZ_SCALE'] ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const settings = (numRuns: number) => ({ seed: SEED, numRuns: runs(numRuns), endOnFailure: true });

const BASE = 'trainyard/tiny-chat';
const MAX_BODY_BYTES = 256 * 1024;
const MAX_UPLOAD_BYTES = 64 * 1024;
const MAX_COMPLETION_TOKENS = 4;
const MAX_CHOICES = 2;
const NAME_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const SPLIT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/;
const INT32_MAX = 2 ** 31 - 1;

/** A JSON fragment sent as written: numbers JSON.stringify cannot make, nesting it would overflow on. */
class RawJson {
  constructor(
    readonly text: string,
    /** A small value that every validity check treats exactly like the real one. */
    readonly standIn: unknown,
    /** Set for what the gateway refuses whatever the field (nesting past its limit, `__proto__` keys): how the refusal reads. */
    readonly refusedAs?: RegExp,
  ) {}

  toString(): string {
    return this.text.length > 80 ? `RawJson(${this.text.slice(0, 40)}...${this.text.length} chars)` : `RawJson(${this.text})`;
  }
}

function encode(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : encode(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${encode(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The value as the server's JSON.parse would see it, with stand-ins for raw fragments. */
function plain(value: unknown): unknown {
  if (value instanceof RawJson) return value.standIn;
  if (typeof value === 'number' && !Number.isFinite(value)) return null; // what JSON.stringify sends for NaN and Infinity
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

const raw = (text: string) => new RawJson(text, JSON.parse(text));
/** The gateway refuses JSON nested deeper than this (apps/gateway/src/http/json-depth.ts). */
const MAX_JSON_DEPTH = 256;
const TOO_DEEP = new RegExp(`nested deeper than ${MAX_JSON_DEPTH} levels`);
const deepArray = (depth: number) => new RawJson('['.repeat(depth) + ']'.repeat(depth), [[[]]], depth > MAX_JSON_DEPTH - 4 ? TOO_DEEP : undefined);
const deepObject = (depth: number) => new RawJson('{"a":'.repeat(depth) + '{}' + '}'.repeat(depth), { a: { a: {} } }, depth > MAX_JSON_DEPTH - 4 ? TOO_DEEP : undefined);

/** How the gateway refuses a value whatever field it is in, if it does: depth is checked first, before parsing. */
function refusal(value: unknown): RegExp | undefined {
  const found = refusals(value);
  return found.includes(TOO_DEEP) ? TOO_DEEP : found[0];
}

function refusals(value: unknown): RegExp[] {
  if (value instanceof RawJson) return value.refusedAs ? [value.refusedAs] : [];
  const items = Array.isArray(value) ? value : value !== null && typeof value === 'object' ? Object.values(value) : [];
  return items.flatMap(refusals);
}
const longArray = (length: number, item = '0') => raw(`[${Array.from({ length }, () => item).join(',')}]`);

// ---- hostile values -------------------------------------------------------------------

const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\ud83d',
  '\u202egnp.exe',
  '\u200b\u200d\ufeff',
  '\u0645\u0631\u062d\u0628\u0627 \u202b',
  '😀👩‍👩‍👧‍👦🏳️‍🌈',
  'e\u0301\u0301\u0301',
  '\uffff\ufffe',
  '\u001b[31mred',
  '\r\nX-Injected: 1',
  '../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '..%2F..%2Fetc%2Fpasswd',
  '/etc/passwd',
  'file:///etc/passwd',
  'NaN',
  'Infinity',
  '-1',
  '1e308',
  '0x10',
  'true',
  'null',
  '{}',
  '[]',
  '<script>alert(1)</script>',
  "'; DROP TABLE models; --",
  '${jndi:ldap://127.0.0.1/a}',
  '%s%s%s%n',
  '__proto__',
];

const NASTY_NUMBERS = [-1, 0, 0.5, 1.5, -1.5, 1e308, -1e308, 5e-324, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, -(2 ** 53) - 2, 2 ** 63, 1e21, 123_456_789];

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', '😀', '\u0000', '\u202e', 'é', '/..'), fc.integer({ min: 5_000, max: 30_000 }))
      .map(([unit, n]) => unit.repeat(n)),
  },
);

const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...NASTY_NUMBERS),
  fc.double(),
  fc.integer(),
  fc.constantFrom('1e400', '-1e400', '1e-400', '-0', '123456789012345678901234567890', '0.1e1', '1E+2').map(raw),
);

/** Keys class-transformer would drop silently: the gateway refuses them by name. */
const protoPollution = fc
  .constantFrom(
    '{"__proto__":{"polluted":true,"isAdmin":true}}',
    '{"__proto__":[]}',
    '{"a":[{"\\u005f_proto__":1}]}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"x":{"constructor":1}}',
  )
  .map((text) => new RawJson(text, JSON.parse(text), /"(__proto__|constructor)" is not allowed as a key/));

const hostileStructure: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom([], {}, [null], [[]], [{}]),
  fc.constantFrom(200, 1_000, 10_000, 40_000).map(deepArray),
  fc.constantFrom(200, 1_000, 10_000).map(deepObject),
  fc.constantFrom(10_001, 40_000).map((n) => longArray(n)),
  fc.integer({ min: 2, max: 2_000 }).map((n) => longArray(n, '{}')),
  protoPollution,
  fc.jsonValue({ maxDepth: 3 }),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 3, arbitrary: hostileStructure },
);

/** Marks a field left out of the body altogether. */
const MISSING = Symbol('missing');

// ---- what is valid where (the contract of api.md, as an oracle) ------------------------

type Oracle = 'valid' | 'invalid' | 'either' | 'changes-data';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nullish = (v: unknown) => v === null || v === undefined;
/** OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, string values of at most 512, all storable. */
const metadataValid = (v: unknown) =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  Object.keys(v).length <= 16 &&
  Object.entries(v).every(([k, x]) => k.length <= 64 && typeof x === 'string' && x.length <= 512 && storableText(k) && storableText(x));
const isFinite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const between = (v: unknown, min: number, max: number) => isFinite(v) && v >= min && v <= max;
const verdictOf = (valid: boolean): Oracle => (valid ? 'valid' : 'invalid');
/** chat_template_kwargs: template variables by identifier; their values are the template's to read. */
const templateKwargs = (v: unknown): Oracle =>
  nullish(v) ? 'valid' : isObject(v) && Object.keys(v).every((k) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) ? 'either' : 'invalid';
/** Text PostgreSQL can store: no NUL, no half of a surrogate pair. */
const storableText = (s: string) => !s.includes('\u0000') && wellFormed(s);

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'];

function chatContentValid(content: unknown): boolean {
  return (
    nullish(content) ||
    typeof content === 'string' ||
    (Array.isArray(content) && content.every((p) => isObject(p) && p['type'] === 'text' && typeof p['text'] === 'string'))
  );
}

/** Content may be left out (or null) only by an assistant message. */
function chatMessageValid(m: unknown): boolean {
  if (!isObject(m) || !ROLES.includes(m['role'] as string) || !chatContentValid(m['content'])) return false;
  if (nullish(m['content']) && m['role'] !== 'assistant') return false;
  if (!nullish(m['name']) && typeof m['name'] !== 'string') return false;
  if (!nullish(m['tool_call_id']) && typeof m['tool_call_id'] !== 'string') return false;
  const calls = m['tool_calls'];
  if (nullish(calls)) return true;
  return (
    Array.isArray(calls) &&
    calls.every(
      (c) =>
        isObject(c) &&
        typeof c['id'] === 'string' &&
        c['type'] === 'function' &&
        isObject(c['function']) &&
        typeof c['function']['name'] === 'string' &&
        typeof c['function']['arguments'] === 'string',
    )
  );
}

function toolChoiceValid(v: unknown): boolean {
  return (
    nullish(v) ||
    ['none', 'auto', 'required'].includes(v as string) ||
    (isObject(v) && v['type'] === 'function' && isObject(v['function']) && typeof v['function']['name'] === 'string')
  );
}

/** POST .../log: what the registry can average and store. */
function trajectoryGroupsLoggable(groups: unknown): boolean {
  if (!Array.isArray(groups)) return false;
  return groups.every(
    (g) =>
      isObject(g) &&
      Array.isArray(g['trajectories']) &&
      g['trajectories'].every((t) => {
        if (!isObject(t)) return false;
        if (!isFinite(t['reward'] ?? 0)) return false;
        const metrics = t['metrics'] ?? {};
        return (
          isObject(metrics) &&
          Object.entries(metrics).every(([k, v]) => storableText(k) && (typeof v === 'boolean' || isFinite(v)))
        );
      }),
  );
}

// ---- the spec ---------------------------------------------------------------------------

describe(`hostile input on every route (fast-check seed ${SEED}; FUZZ_SEED=${SEED} replays it)`, () => {
  let stack: Stack;
  let acme: string;
  let globex: string;
  const ids = {} as {
    model: string;
    checkpoint: string;
    trainedModel: string;
    file: string;
    job: string;
    events: string[];
    theirModel: string;
    theirCheckpoint: string;
    theirFile: string;
    theirJob: string;
    theirEvent: string;
    theirKey: string;
    fineTuningJob: string;
    theirFineTuningJob: string;
    /** Another entity's stored response, one of its output items, and its conversation. */
    theirResponse: string;
    theirOutputItem: string;
    theirConversation: string;
  };
  /** The console's session of acme: its cookie and CSRF token, for the console's own routes. */
  let consoleHeaders: Record<string, string>;
  let before: Record<string, unknown>;
  const tally = new Tally();

  const DATASET = [
    { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] },
    { messages: [{ role: 'user', content: 'bye' }, { role: 'assistant', content: 'see you' }] },
  ]
    .map((line) => JSON.stringify(line))
    .join('\n');

  async function upload(key: string, filename = 'data.jsonl'): Promise<string> {
    const { body, contentType } = multipart([
      { name: 'purpose', data: 'fine-tune' },
      { name: 'file', filename, contentType: 'application/jsonl', data: DATASET },
    ]);
    const answer = await send(stack.baseUrl, { method: 'POST', path: '/v1/files', key, body, headers: { 'content-type': contentType } });
    if (answer.status !== 200) throw new Error(`upload failed: ${answer.status} ${answer.text}`);
    return (answer.json as { id: string }).id;
  }

  async function cancelledSftJob(key: string, modelId: string, fileId: string): Promise<string> {
    const job = await stack.json<{ id: string }>('POST', '/v1/preview/sft-training-jobs', key, { model_id: modelId, training_data_url: fileId });
    await stack.call('POST', `/v1/preview/training-jobs/${job.id}/cancel`, { key });
    await waitFor(
      async () => ['cancelled', 'succeeded', 'failed'].includes((await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.id}`, key)).status),
      { what: `job ${job.id} to end`, timeoutMs: 120_000, intervalMs: 200 },
    );
    return job.id;
  }

  async function cancelledFineTuningJob(key: string, fileId: string): Promise<string> {
    const job = await stack.json<{ id: string }>('POST', '/v1/fine_tuning/jobs', key, { model: BASE, training_file: fileId });
    await stack.call('POST', `/v1/fine_tuning/jobs/${job.id}/cancel`, { key });
    await waitFor(async () => ['cancelled', 'succeeded', 'failed'].includes((await stack.json<{ status: string }>('GET', `/v1/fine_tuning/jobs/${job.id}`, key)).status), {
      what: `fine-tuning job ${job.id} to end`,
      timeoutMs: 120_000,
      intervalMs: 200,
    });
    return job.id;
  }

  beforeAll(async () => {
    stack = await Stack.start({
      env: {
        MAX_BODY_BYTES: String(MAX_BODY_BYTES),
        MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
        MAX_COMPLETION_TOKENS: String(MAX_COMPLETION_TOKENS),
        DEFAULT_MAX_TOKENS: '2',
        MAX_CHOICES: String(MAX_CHOICES),
        // The fuzzer is one client sending hundreds of requests: rate limits are not what is tested here.
        KEY_RATE_LIMIT_REQUESTS: '0',
      },
    });
    stack.addTinyModel(BASE);
    acme = (await stack.createKey('acme')).key;
    const theirKey = await stack.createKey('globex');
    globex = theirKey.key;
    ids.theirKey = theirKey.id;
    const create = (key: string, name: string) =>
      stack.json<{ id: string }>('POST', '/v1/preview/models', key, { project: 'fuzz', name, base_model: BASE, return_existing: true });
    const firstCheckpoint = async (key: string, modelId: string) =>
      (await stack.json<Page<CheckpointRecord>>('GET', `/v1/preview/models/${modelId}/checkpoints`, key)).data[0].id;
    ids.model = (await create(acme, 'target')).id;
    ids.checkpoint = await firstCheckpoint(acme, ids.model);
    ids.trainedModel = (await create(acme, 'trained')).id;
    ids.theirModel = (await create(globex, 'theirs')).id;
    ids.theirCheckpoint = await firstCheckpoint(globex, ids.theirModel);
    ids.file = await upload(acme);
    ids.theirFile = await upload(globex);
    ids.job = await cancelledSftJob(acme, ids.trainedModel, ids.file);
    ids.theirJob = await cancelledSftJob(globex, ids.theirModel, ids.theirFile);
    ids.events = (await stack.json<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${ids.job}/events`, acme)).data.map((e) => e.id);
    ids.theirEvent = (await stack.json<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${ids.theirJob}/events`, globex)).data[0].id;
    ids.fineTuningJob = await cancelledFineTuningJob(acme, ids.file);
    ids.theirFineTuningJob = await cancelledFineTuningJob(globex, ids.theirFile);
    const theirResponse = await stack.json<{ id: string; output: { id: string }[] }>('POST', '/v1/responses', globex, { model: BASE, input: 'theirs', max_output_tokens: 2 });
    ids.theirResponse = theirResponse.id;
    ids.theirOutputItem = theirResponse.output[0].id;
    ids.theirConversation = (await stack.json<{ id: string }>('POST', '/v1/conversations', globex, { items: [{ type: 'message', role: 'user', content: 'theirs' }] })).id;
    const signIn = await send(stack.baseUrl, { method: 'POST', path: '/console/api/session', headers: JSON_TYPE, body: JSON.stringify({ key: acme }) });
    if (signIn.status !== 200) throw new Error(`console sign-in failed: ${signIn.status} ${signIn.text}`);
    const cookie = String(signIn.headers['set-cookie']).split(';')[0];
    consoleHeaders = { cookie, 'x-csrf-token': (signIn.json as { csrf_token: string }).csrf_token };
    before = await storedState(stack);
  }, 300_000);

  afterAll(async () => {
    const report = `hostile input, seed ${SEED}, scale ${SCALE}: ${tally.total} requests\n${tally}`;
    writeFileSync(join(stack?.logDir ?? '/tmp', 'hostile-input-report.txt'), report);
    console.log(report);
    await stack?.stop();
  }, 60_000);

  /** Sends one hostile request, records it, and checks the answer against the verdict. */
  async function attempt(route: string, req: HostileRequest, verdict: Verdict, names?: RegExp): Promise<Answer> {
    const answer = await send(stack.baseUrl, req);
    tally.record(route, answer.status);
    check(req, answer, verdict, names);
    return answer;
  }

  const JSON_TYPE: Record<string, string> = { 'content-type': 'application/json' };

  /** Field name as a message may put it: `base_model`, or in words, `base model`. */
  const named = (field: string) => new RegExp(field.replace(/_/g, '[_ ]'), 'i');

  interface FieldRule {
    oracle: (value: unknown) => Oracle;
    names?: RegExp;
    extra?: fc.Arbitrary<unknown>;
  }

  interface BodyRoute {
    route: string;
    method: string;
    path: () => string;
    base: () => Record<string, unknown>;
    fields: Record<string, FieldRule>;
    /** How the request authenticates: acme's bearer key unless given (the console's routes use its session). */
    auth?: () => { key?: string; headers: Record<string, string> };
  }

  /**
   * One field of a valid body replaced by a hostile value (or left out). An invalid value must
   * be refused naming the field; a valid one accepted; values that would change stored data
   * are not generated.
   */
  async function fuzzFields(spec: BodyRoute, numRuns: number): Promise<void> {
    const fieldNames = Object.keys(spec.fields);
    const cases = fc
      .constantFrom(...fieldNames)
      .chain((field) =>
        fc.tuple(
          fc.constant(field),
          fc.oneof(
            { weight: 6, arbitrary: hostileValue },
            { weight: 3, arbitrary: spec.fields[field].extra ?? hostileValue },
            { weight: 1, arbitrary: fc.constant<unknown>(MISSING) },
          ),
        ),
      )
      .filter(([field, value]) => spec.fields[field].oracle(value === MISSING ? undefined : plain(value)) !== 'changes-data');
    await fc.assert(
      fc.asyncProperty(cases, async ([field, value]) => {
        const body: Record<string, unknown> = { ...spec.base(), [field]: value };
        if (value === MISSING) delete body[field];
        const oracle = spec.fields[field].oracle(value === MISSING ? undefined : plain(value));
        const text = encode(body);
        // Several big values together can pass the body limit: refused before anything reads them.
        const refused = Buffer.byteLength(text) > MAX_BODY_BYTES ? /larger than the limit/ : refusal(value);
        const verdict: Verdict = refused || oracle === 'invalid' ? 'refuse' : oracle === 'valid' ? 'accept' : 'either';
        const auth = spec.auth?.() ?? { key: acme, headers: {} };
        await attempt(
          `${spec.method} ${spec.route} .${field}`,
          { method: spec.method, path: spec.path(), key: auth.key, headers: { ...JSON_TYPE, ...auth.headers }, body: text },
          verdict,
          refused ?? spec.fields[field].names ?? named(field),
        );
      }),
      settings(numRuns),
    );
  }

  // -------------------------------------------------------------------------------------

  describe('bodies: one hostile field in an otherwise valid request', () => {
    it('POST /v1/chat/completions', async () => {
      const messageLike = fc.record(
        { role: fc.oneof(fc.constantFrom(...ROLES), hostileValue), content: fc.oneof(fc.constant('hi'), hostileValue, hostileString) },
        { requiredKeys: ['role'] },
      );
      const nullableBool = (v: unknown) => verdictOf(nullish(v) || typeof v === 'boolean');
      const tokens = (v: unknown) => verdictOf(nullish(v) || (isInt(v) && v >= 1 && v <= MAX_COMPLETION_TOKENS));
      await fuzzFields(
        {
          route: '/v1/chat/completions',
          method: 'POST',
          path: () => '/v1/chat/completions',
          base: () => ({ model: BASE, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
          fields: {
            model: {
              oracle: (v) => verdictOf(v === BASE),
              extra: fc.constantFrom(
                `wandb-artifact:///globex/fuzz/theirs`,
                `wandb-artifact:///acme/fuzz/target:step999`,
                `wandb-artifact:///acme/fuzz/target:step${'9'.repeat(400)}`,
                `wandb-artifact:///../../etc/passwd`,
                `acme/fuzz/../../../etc`,
                `${BASE}/../../../../etc`,
                `../${BASE}`,
                `${BASE}\u0000`,
                '.',
                '..',
              ),
            },
            messages: {
              // Valid messages may still be more than the model's context window, or more than its chat template takes.
              oracle: (v) => (Array.isArray(v) && v.length > 0 && v.every(chatMessageValid) ? 'either' : 'invalid'),
              names: /messages|chat template/i,
              extra: fc.array(messageLike, { minLength: 0, maxLength: 3 }),
            },
            temperature: { oracle: (v) => verdictOf(nullish(v) || between(v, 0, 2)) },
            top_p: { oracle: (v) => verdictOf(nullish(v) || between(v, 0, 1)) },
            max_tokens: { oracle: tokens },
            max_completion_tokens: { oracle: tokens },
            n: { oracle: (v) => verdictOf(nullish(v) || (isInt(v) && v >= 1 && v <= MAX_CHOICES)) },
            stop: {
              oracle: (v) => verdictOf(nullish(v) || typeof v === 'string' || (Array.isArray(v) && v.length <= 4 && v.every((s) => typeof s === 'string'))),
              extra: fc.array(hostileString, { maxLength: 6 }),
            },
            seed: { oracle: (v) => verdictOf(nullish(v) || (typeof v === 'number' && Number.isSafeInteger(v))) },
            logprobs: { oracle: nullableBool },
            top_logprobs: { oracle: (v) => verdictOf(nullish(v) || v === 0) },
            response_format: {
              oracle: (v) => {
                if (nullish(v)) return 'valid';
                if (!isObject(v)) return 'invalid';
                if (v['type'] === 'text' || v['type'] === 'json_object') return 'valid';
                const schema = v['json_schema'];
                if (
                  v['type'] === 'json_schema' &&
                  isObject(schema) &&
                  typeof schema['name'] === 'string' &&
                  schema['name'] !== '' &&
                  (nullish(schema['schema']) || isObject(schema['schema'])) &&
                  (nullish(schema['strict']) || typeof schema['strict'] === 'boolean')
                ) {
                  // Whether a schema can be decoded is the worker's to say: 200, or 400 naming response_format.
                  return 'either';
                }
                return 'invalid';
              },
              extra: fc.oneof(
                fc.record({ type: fc.oneof(fc.constantFrom('text', 'json_object', 'json_schema'), hostileValue) }),
                fc.record({
                  type: fc.constant('json_schema'),
                  json_schema: fc.oneof(
                    hostileValue,
                    fc.record({ name: fc.oneof(fc.constant('x'), hostileValue), schema: fc.oneof(hostileValue, fc.constantFrom({ type: 123 }, { $ref: '#/nope' }, { type: 'object', properties: { a: { type: 'nonsense' } } }, { enum: [] }, { type: 'string', pattern: '(' })) }),
                  ),
                }),
              ),
            },
            stream: { oracle: nullableBool },
            stream_options: {
              oracle: (v) => verdictOf(nullish(v) || (isObject(v) && (nullish(v['include_usage']) || typeof v['include_usage'] === 'boolean'))),
              extra: fc.record({ include_usage: hostileValue }),
            },
            tools: {
              oracle: (v) => (nullish(v) ? 'valid' : Array.isArray(v) && v.every(isObject) ? 'either' : 'invalid'),
              names: /tools|chat template/i,
              extra: fc.array(fc.oneof(hostileValue, fc.dictionary(hostileString, hostileValue, { maxKeys: 3 })), { maxLength: 3 }),
            },
            tool_choice: {
              oracle: (v) => (toolChoiceValid(v) ? 'either' : 'invalid'),
              extra: fc.record({ type: fc.oneof(fc.constant('function'), hostileValue), function: fc.oneof(hostileValue, fc.record({ name: hostileValue })) }),
            },
            user: { oracle: (v) => verdictOf(nullish(v) || typeof v === 'string') },
            return_token_ids: { oracle: nullableBool },
            chat_template_kwargs: { oracle: templateKwargs, names: /chat_template_kwargs|chat template/i },
            // Only true keeps the completion.
            store: { oracle: (v) => (v === true ? 'changes-data' : verdictOf(nullish(v) || v === false)) },
            metadata: {
              oracle: (v) => verdictOf(nullish(v) || metadataValid(v)),
              extra: fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 600 }), hostileValue), { maxKeys: 20 }),
            },
          },
        },
        240,
      );
    });

    it('POST /v1/responses', async () => {
      const nullableBool = (v: unknown) => verdictOf(nullish(v) || typeof v === 'boolean');
      const itemLike = fc.oneof(
        fc.record({ role: fc.oneof(fc.constantFrom('user', 'assistant', 'system', 'developer', 'tool'), hostileValue), content: fc.oneof(fc.constant('hi'), hostileValue, hostileString) }, { requiredKeys: ['role'] }),
        fc.record({ type: fc.constantFrom('function_call', 'function_call_output', 'item_reference', 'reasoning', 'message'), call_id: fc.oneof(fc.constant('c1'), hostileValue), name: hostileValue, arguments: hostileValue, output: hostileValue }),
      );
      await fuzzFields(
        {
          route: '/v1/responses',
          method: 'POST',
          path: () => '/v1/responses',
          // store: false, so that what is accepted stores nothing (see "afterwards").
          base: () => ({ model: BASE, input: 'hi', max_output_tokens: 2, store: false }),
          fields: {
            model: { oracle: (v) => verdictOf(v === BASE), extra: fc.constantFrom('wandb-artifact:///globex/fuzz/theirs', `${BASE}/../../etc`, '..') },
            // A valid input may still be more than the context window, or more than the chat template takes.
            input: {
              oracle: (v) => ((typeof v === 'string' && v !== '') || (Array.isArray(v) && v.length > 0 && v.every(isObject)) ? 'either' : 'invalid'),
              names: /input|context length|chat template/i,
              extra: fc.array(itemLike, { minLength: 0, maxLength: 3 }),
            },
            instructions: { oracle: (v) => (nullish(v) ? 'valid' : typeof v === 'string' ? 'either' : 'invalid'), names: /instructions|context length|chat template/i },
            max_output_tokens: { oracle: (v) => verdictOf(nullish(v) || (isInt(v) && v >= 1 && v <= MAX_COMPLETION_TOKENS)) },
            temperature: { oracle: (v) => verdictOf(nullish(v) || between(v, 0, 2)) },
            top_p: { oracle: (v) => verdictOf(nullish(v) || between(v, 0, 1)) },
            text: {
              oracle: (v) => {
                if (nullish(v) || (isObject(v) && nullish(v['format']))) return 'valid';
                const format = isObject(v) ? v['format'] : undefined;
                if (!isObject(format)) return 'invalid';
                if (format['type'] === 'text' || format['type'] === 'json_object') return 'either';
                // Whether a schema can be decoded is the worker's to say.
                if (format['type'] === 'json_schema' && typeof format['name'] === 'string' && format['name'] !== '' && isObject(format['schema'])) return 'either';
                return 'invalid';
              },
              extra: fc.record({ format: fc.oneof(hostileValue, fc.record({ type: fc.oneof(fc.constantFrom('text', 'json_object', 'json_schema'), hostileValue), name: hostileValue, schema: hostileValue })) }),
            },
            tools: {
              oracle: (v) => (nullish(v) ? 'valid' : Array.isArray(v) && v.every(isObject) ? 'either' : 'invalid'),
              names: /tools|chat template/i,
              extra: fc.array(fc.oneof(hostileValue, fc.record({ type: fc.oneof(fc.constant('function'), hostileValue), name: hostileValue, parameters: hostileValue })), { maxLength: 3 }),
            },
            tool_choice: {
              oracle: (v) =>
                nullish(v) || ['none', 'auto', 'required'].includes(v as string) || (isObject(v) && v['type'] === 'function' && typeof v['name'] === 'string') ? 'either' : 'invalid',
              extra: fc.record({ type: fc.oneof(fc.constant('function'), hostileValue), name: hostileValue }),
            },
            parallel_tool_calls: { oracle: nullableBool },
            stream: { oracle: nullableBool },
            // Only false stores nothing; true (or the default) would keep the response.
            store: { oracle: (v) => (v === false ? 'valid' : nullish(v) || v === true ? 'changes-data' : 'invalid') },
            // No stored response or conversation has these ids: 404, or 400 for what cannot be one.
            // Another entity's response and conversation are refused as ones that do not exist.
            previous_response_id: { oracle: (v) => verdictOf(nullish(v)), names: /previous[_ ]response/i, extra: fc.constantFrom(ids.theirResponse, ids.theirOutputItem) },
            conversation: {
              oracle: (v) => verdictOf(nullish(v)),
              names: /conversation/i,
              extra: fc.oneof(fc.string(), fc.record({ id: hostileValue }), fc.constantFrom(ids.theirConversation, { id: ids.theirConversation })),
            },
            metadata: {
              oracle: (v) => verdictOf(nullish(v) || metadataValid(v)),
              extra: fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 600 }), hostileValue), { maxKeys: 20 }),
            },
            include: { oracle: (v) => (nullish(v) ? 'valid' : Array.isArray(v) && v.every((x) => typeof x === 'string') ? 'either' : 'invalid'), names: /include|top_logprobs/i },
            top_logprobs: { oracle: (v) => (nullish(v) || v === 0 ? 'valid' : isInt(v) && v >= 0 && v <= 20 ? 'either' : 'invalid'), names: /top_logprobs|include/i },
            user: { oracle: (v) => verdictOf(nullish(v) || typeof v === 'string') },
            chat_template_kwargs: { oracle: templateKwargs, names: /chat_template_kwargs|chat template/i },
            reasoning: {
              oracle: (v) => verdictOf(nullish(v) || (isObject(v) && (nullish(v['effort']) || ['none', 'minimal', 'low', 'medium', 'high'].includes(v['effort'] as string)))),
              extra: fc.record({ effort: fc.oneof(fc.constantFrom('none', 'high'), hostileValue) }),
            },
          },
        },
        200,
      );
    });

    it('POST /v1/chat/completions/export and /v1/responses/export', async () => {
      // class-validator counts a surrogate pair (and drops a variation selector) as it measures: past the limit in UTF-16 units may still be within it.
      const optionalText = (max: number, min = 0) => (v: unknown): Oracle =>
        nullish(v) ? 'valid' : typeof v !== 'string' || v.length < min ? 'invalid' : v.length <= max ? 'valid' : 'either';
      const modelName = (v: unknown): Oracle => (typeof v === 'string' && !storableText(v) ? 'invalid' : optionalText(1024)(v));
      const seconds = (v: unknown) => verdictOf(nullish(v) || (isInt(v) && v >= 0 && v <= 8_640_000_000_000));
      for (const path of ['/v1/chat/completions/export', '/v1/responses/export']) {
        await fuzzFields(
          {
            route: path,
            method: 'POST',
            path: () => path,
            base: () => ({ format: 'art', metadata: { fuzz: 'none' } }),
            fields: {
              format: { oracle: (v) => verdictOf(v === 'sft' || v === 'art') },
              ids: { oracle: (v) => verdictOf(nullish(v) || (Array.isArray(v) && v.length <= 1000 && v.every((x) => typeof x === 'string'))), extra: fc.array(hostileString, { maxLength: 4 }) },
              model: { oracle: modelName },
              metadata: { oracle: (v) => verdictOf(nullish(v) || metadataValid(v)) },
              created_after: { oracle: seconds },
              created_before: { oracle: seconds },
              group_by: { oracle: optionalText(64, 1) },
              reward_key: { oracle: optionalText(64, 1) },
              trajectory_by: { oracle: optionalText(64, 1) },
            },
          },
          60,
        );
      }
    });

    it('POST /v1/preview/models (get-or-create of an existing model)', async () => {
      const segment = (existing: string) => (v: unknown): Oracle =>
        v === existing ? 'valid' : typeof v === 'string' && NAME_SEGMENT.test(v) ? 'changes-data' : 'invalid';
      await fuzzFields(
        {
          route: '/v1/preview/models',
          method: 'POST',
          path: () => '/v1/preview/models',
          base: () => ({ entity: null, project: 'fuzz', name: 'target', base_model: BASE, return_existing: true }),
          fields: {
            entity: { oracle: (v) => verdictOf(nullish(v) || v === 'acme'), extra: fc.constantFrom('globex', 'ACME', 'acme\u0000', ' acme') },
            project: { oracle: segment('fuzz'), extra: fc.constantFrom('.hidden', '-x', 'a/b', 'a:b', 'x'.repeat(129), 'fuzz\u0000', 'fuzz/../x') },
            name: { oracle: segment('target'), extra: fc.constantFrom('..', '../target', 'target\u0000', 'tar get', 'x'.repeat(129)) },
            base_model: { oracle: (v) => verdictOf(v === BASE), extra: fc.constantFrom(`../${BASE}`, `${BASE}/..`, '/etc', 'trainyard', `${BASE} `, 'x'.repeat(300)) },
            return_existing: { oracle: (v) => verdictOf(v === true) },
          },
        },
        100,
      );
    });

    it('DELETE /v1/preview/models/{id}/checkpoints', async () => {
      await fuzzFields(
        {
          route: '/v1/preview/models/{id}/checkpoints',
          method: 'DELETE',
          path: () => `/v1/preview/models/${ids.model}/checkpoints`,
          base: () => ({ steps: [12_345] }),
          fields: {
            steps: {
              // The model has only step 0: deleting it is refused (409), any other step is simply not found.
              oracle: (v) =>
                verdictOf(
                  Array.isArray(v) && v.length >= 1 && v.length <= 10_000 && v.every((s) => isInt(s) && s >= 1 && s <= INT32_MAX),
                ),
              names: /step/i,
              extra: fc.oneof(
                fc.array(fc.oneof(fc.constantFrom(...NASTY_NUMBERS), fc.integer({ min: 1 }), fc.constantFrom(INT32_MAX, INT32_MAX + 1, 0)), { minLength: 1, maxLength: 5 }),
                fc.constantFrom(10_001, 40_000).map((n) => longArray(n, '7')),
              ),
            },
          },
        },
        80,
      );
    });

    it('POST /v1/preview/models/{id}/log', async () => {
      const trajectory = fc.record(
        {
          reward: fc.oneof(hostileNumber, hostileValue),
          metrics: fc.oneof(hostileValue, fc.dictionary(hostileString, fc.oneof(hostileNumber, hostileValue), { maxKeys: 3 })),
          messages_and_choices: hostileValue,
        },
        { requiredKeys: [] },
      );
      await fuzzFields(
        {
          route: '/v1/preview/models/{id}/log',
          method: 'POST',
          path: () => `/v1/preview/models/${ids.model}/log`,
          base: () => ({ split: 'fuzz', trajectory_groups: [{ trajectories: [{ reward: 1 }] }] }),
          fields: {
            split: { oracle: (v) => (typeof v === 'string' && SPLIT.test(v) ? 'changes-data' : 'invalid') },
            trajectory_groups: {
              oracle: (v) => (trajectoryGroupsLoggable(v) ? 'changes-data' : 'invalid'),
              extra: fc.array(fc.oneof(hostileValue, fc.record({ trajectories: fc.oneof(hostileValue, fc.array(fc.oneof(trajectory, hostileValue), { maxLength: 3 })) })), {
                minLength: 1,
                maxLength: 3,
              }),
            },
          },
        },
        120,
      );
    });

    it('POST /v1/preview/training-jobs (RL)', async () => {
      const validGroups = () => [
        {
          trajectories: [0, 1].map((reward) => ({
            reward,
            messages_and_choices: [
              { role: 'user', content: 'hi' },
              { index: 0, message: { role: 'assistant', content: 'yo' }, token_ids: [5, 6], logprobs: null, finish_reason: 'stop' },
            ],
          })),
        },
      ];
      const choice = fc.record({ message: fc.oneof(hostileValue, fc.record({ role: hostileValue, content: hostileValue })), token_ids: fc.oneof(hostileValue, fc.array(hostileNumber, { maxLength: 4 })), logprobs: hostileValue });
      await fuzzFields(
        {
          route: '/v1/preview/training-jobs',
          method: 'POST',
          path: () => '/v1/preview/training-jobs',
          base: () => ({ model_id: ids.model, trajectory_groups: validGroups(), experimental_config: null }),
          fields: {
            model_id: {
              // A uuid in capitals is the same uuid.
              oracle: (v) => (typeof v === 'string' && v.toLowerCase() === ids.model ? 'changes-data' : 'invalid'),
              names: /model/i,
              extra: fc.constantFrom(ids.theirModel, ids.file, ids.job, `${ids.model}\u0000`, `../${ids.model}`, '00000000-0000-0000-0000-000000000000'),
            },
            trajectory_groups: {
              oracle: (v) => (mapArtTrajectoryGroups(v).issues.length === 0 ? 'changes-data' : 'invalid'),
              extra: fc.array(
                fc.record({ trajectories: fc.array(fc.record({ reward: hostileValue, messages_and_choices: fc.array(fc.oneof(choice, hostileValue), { maxLength: 2 }) }), { maxLength: 2 }) }),
                { minLength: 1, maxLength: 2 },
              ),
            },
            experimental_config: {
              oracle: (v) => (validateExperimentalConfig(v).errors.length === 0 && !(isObject(v) && !nullish(v['kl_ref_adapter_path'])) ? 'changes-data' : 'invalid'),
              extra: fc.oneof(
                fc.dictionary(fc.constantFrom('learning_rate', 'loss_fn', 'epsilon', 'advantage_balance', 'packed_sequence_length', 'kl_penalty_reference_step', 'kl_ref_adapter_path', 'unknown_key'), hostileValue, { minKeys: 1, maxKeys: 2 }),
                fc.constantFrom(
                  { kl_ref_adapter_path: '/etc' },
                  { kl_ref_adapter_path: '../../../../etc/passwd' },
                  { kl_ref_adapter_path: 'wandb-artifact:///globex/fuzz/theirs:step0' },
                  { kl_ref_adapter_path: 'adapters' },
                ),
              ),
            },
          },
        },
        120,
      );
    });

    it('POST /v1/preview/sft-training-jobs', async () => {
      await fuzzFields(
        {
          route: '/v1/preview/sft-training-jobs',
          method: 'POST',
          path: () => '/v1/preview/sft-training-jobs',
          base: () => ({ model_id: ids.model, training_data_url: ids.file, config: null, experimental_config: null }),
          fields: {
            model_id: { oracle: (v) => (typeof v === 'string' && v.toLowerCase() === ids.model ? 'changes-data' : 'invalid'), names: /model/i, extra: fc.constantFrom(ids.theirModel, ids.file, `${ids.model}/../${ids.model}`) },
            training_data_url: {
              oracle: (v) => ([ids.file, `file://${ids.file}`, `openai://${ids.file}`].includes(v as string) ? 'changes-data' : 'invalid'),
              names: /training[_ ]data[_ ]url|file/i,
              extra: fc.constantFrom(
                ids.theirFile,
                `file://${ids.theirFile}`,
                `file-${'A'.repeat(24)}`,
                `file-../../etc/passwd`,
                `file://../../etc/passwd`,
                `file:///etc/passwd`,
                `openai://../../../etc/passwd`,
                'http://127.0.0.1:1/data.jsonl',
                'ftp://127.0.0.1/data.jsonl',
                'javascript:alert(1)',
                'data:application/jsonl,{}',
                `${ids.file}\u0000`,
              ),
            },
            config: {
              oracle: (v) => (validateSftConfig(v).errors.length === 0 ? 'changes-data' : 'invalid'),
              extra: fc.dictionary(fc.constantFrom('batch_size', 'learning_rate', 'metric_logging', 'epochs'), fc.oneof(hostileValue, fc.array(hostileNumber, { maxLength: 3 })), { minKeys: 1, maxKeys: 2 }),
            },
            experimental_config: {
              oracle: (v) => (validateSftExperimentalConfig(v).errors.length === 0 ? 'changes-data' : 'invalid'),
              extra: fc.dictionary(hostileString, hostileValue, { minKeys: 1, maxKeys: 2 }),
            },
          },
        },
        80,
      );
    });

    it('POST /v1/fine_tuning/jobs', async () => {
      // A valid body makes a model and a job: only invalid ones are sent.
      const made = (valid: boolean): Oracle => (valid ? 'changes-data' : 'invalid');
      const autoOr = (v: unknown, integer: boolean, min: number, max: number, exclusive = false) =>
        nullish(v) || v === 'auto' || (isFinite(v) && (!integer || isInt(v)) && (exclusive ? v > min : v >= min) && v <= max);
      const hyperparameters = (v: unknown) =>
        nullish(v) ||
        (isObject(v) &&
          autoOr(v['n_epochs'], true, 1, 50) &&
          autoOr(v['batch_size'], true, 1, 256) &&
          autoOr(v['learning_rate_multiplier'], false, 0, 10, true));
      const hyperparameterLike = fc.dictionary(fc.constantFrom('n_epochs', 'batch_size', 'learning_rate_multiplier'), fc.oneof(fc.constant('auto'), hostileNumber, hostileValue), { maxKeys: 3 });
      await fuzzFields(
        {
          route: '/v1/fine_tuning/jobs',
          method: 'POST',
          path: () => '/v1/fine_tuning/jobs',
          base: () => ({ model: BASE, training_file: ids.file }),
          fields: {
            model: {
              oracle: (v) => made(v === BASE),
              extra: fc.constantFrom('gpt-4o-mini', 'wandb-artifact:///acme/fuzz/target', 'wandb-artifact:///globex/fuzz/theirs', `${BASE}\u0000`, `../${BASE}`, `${BASE}/../../etc`),
            },
            training_file: {
              oracle: (v) => made(v === ids.file),
              extra: fc.constantFrom(ids.theirFile, `file-${'A'.repeat(24)}`, 'file-../../etc/passwd', `file://${ids.file}`, `${ids.file}\u0000`),
            },
            validation_file: {
              oracle: (v) => made(nullish(v) || v === ids.file),
              extra: fc.constantFrom(ids.theirFile, `file-${'A'.repeat(24)}`, 'file-../../etc/passwd'),
            },
            suffix: {
              oracle: (v) => made(nullish(v) || v === '' || (typeof v === 'string' && /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/.test(v))),
              extra: fc.constantFrom('../x', 'a/b', 'a:b', '.hidden', 'x'.repeat(65), 'ok-suffix'),
            },
            seed: { oracle: (v) => made(nullish(v) || (isInt(v) && v >= 0 && v <= 2_147_483_647)) },
            metadata: {
              oracle: (v) =>
                made(
                  nullish(v) ||
                    (isObject(v) &&
                      Object.keys(v).length <= 16 &&
                      Object.entries(v).every(([key, value]) => key.length <= 64 && typeof value === 'string' && value.length <= 512 && storableText(key) && storableText(value))),
                ),
              extra: fc.dictionary(hostileString, fc.oneof(hostileString, hostileValue), { maxKeys: 20 }),
            },
            hyperparameters: { oracle: (v) => made(hyperparameters(v)), extra: hyperparameterLike },
            method: {
              oracle: (v) =>
                made(
                  nullish(v) ||
                    (isObject(v) &&
                      v['type'] === 'supervised' &&
                      (nullish(v['supervised']) || (isObject(v['supervised']) && hyperparameters(v['supervised']['hyperparameters'])))),
                ),
              names: /method|type|hyperparameters|n_epochs|batch_size|learning_rate_multiplier/i,
              extra: fc.record({
                type: fc.oneof(fc.constantFrom('supervised', 'dpo', 'reinforcement'), hostileValue),
                supervised: fc.oneof(fc.record({ hyperparameters: fc.oneof(hyperparameterLike, hostileValue) }), hostileValue),
              }),
            },
          },
        },
        80,
      );
    });
  });

  describe("bodies of the console's own routes", () => {
    it('POST /console/api/session (sign-in)', async () => {
      await fuzzFields(
        {
          route: '/console/api/session',
          method: 'POST',
          path: () => '/console/api/session',
          base: () => ({ key: `${acme}-not-this-one` }),
          // No generated value is a key this stack issued (the console trims whitespace around a pasted key, so
          // no padded copy is sent either): every sign-in is refused, naming the key.
          fields: { key: { oracle: () => 'invalid', extra: fc.constantFrom(acme.toUpperCase(), `${acme}x`, `Bearer ${acme}`, acme.slice(0, 10), `${acme}\u0000`) } },
          auth: () => ({ headers: {} }),
        },
        40,
      );
    });

    it('POST /console/api/keys (create a key)', async () => {
      await fuzzFields(
        {
          route: '/console/api/keys',
          method: 'POST',
          path: () => '/console/api/keys',
          base: () => ({ name: '' }),
          fields: {
            name: {
              oracle: (v) => (typeof v === 'string' && v.trim().length >= 1 && v.trim().length <= 100 ? 'changes-data' : 'invalid'),
              extra: fc.constantFrom(' ', '\t\n', 'x'.repeat(101), ' '.repeat(300)),
            },
          },
          auth: () => ({ headers: consoleHeaders }),
        },
        30,
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('bodies that are not what the route reads at all', () => {
    const JSON_ROUTES = (): { method: string; path: string }[] => [
      { method: 'POST', path: '/v1/chat/completions' },
      { method: 'POST', path: '/v1/chat/completions/' },
      { method: 'POST', path: '/v1/chat/completions/x%00y' },
      { method: 'POST', path: '/v1/responses' },
      { method: 'POST', path: '/v1/chat/completions/export' },
      { method: 'POST', path: '/v1/responses/export' },
      { method: 'POST', path: '/v1/preview/models' },
      { method: 'DELETE', path: `/v1/preview/models/${ids.model}/checkpoints` },
      { method: 'POST', path: `/v1/preview/models/${ids.model}/log` },
      { method: 'POST', path: '/v1/preview/training-jobs' },
      { method: 'POST', path: '/v1/preview/sft-training-jobs' },
      { method: 'POST', path: `/v1/preview/training-jobs/${ids.job}/cancel` },
      { method: 'POST', path: '/v1/fine_tuning/jobs' },
      { method: 'POST', path: `/v1/fine_tuning/jobs/${ids.fineTuningJob}/cancel` },
      { method: 'POST', path: '/v1/files' },
      { method: 'POST', path: '/console/api/session' },
      { method: 'POST', path: '/console/api/keys' },
    ];
    const route = () => fc.constantFrom(...JSON_ROUTES());

    it('malformed JSON is a 4xx saying so', async () => {
      const valid = JSON.stringify({ model: BASE, messages: [{ role: 'user', content: 'hi' }], project: 'p', name: 'n', steps: [1] });
      const malformed = fc.oneof(
        fc.integer({ min: 1, max: valid.length - 1 }).map((n) => valid.slice(0, n)),
        fc.constantFrom(
          '{',
          '{"a":}',
          '{"a":1,}',
          '{a:1}',
          "{'a':1}",
          '{"a":NaN}',
          '{"a":Infinity}',
          '{"a":-Infinity}',
          '{"a":undefined}',
          '{"a":0x10}',
          '{"a":01}',
          '{"a":.5}',
          '{"a":"\\x41"}',
          '{"a":"\\u12"}',
          '{"a":"line\nbreak"}',
          '{"a":1}{"b":2}',
          '{"a":1} trailing',
          '[1,2,,3]',
          '/* comment */ {}',
          'null',
          'true',
          '0',
          '"just a string"',
          ' ',
          '{"a":"\u0000"}',
        ),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((s) => {
          try {
            JSON.parse(s);
            return false;
          } catch {
            return true;
          }
        }),
        fc.constant('['.repeat(5_000)),
      );
      await fc.assert(
        fc.asyncProperty(route(), malformed, async (r, body) => {
          const answer = await attempt(`${r.method} ${r.path.replace(/[0-9a-f-]{36}/g, '{id}')} malformed JSON`, { ...r, key: acme, headers: JSON_TYPE, body }, 'refuse');
          // OpenAI's routes answer an invalid body with 400, as OpenAI does; the others with FastAPI's 422.
          const expected = /^\/v1\/(chat|responses|files|fine_tuning)/.test(r.path) ? 400 : 422;
          if (body.trim() !== '' && answer.status !== expected) throw new Error(`expected ${expected} for malformed JSON ${JSON.stringify(body.slice(0, 60))}, got ${answer.status}`);
        }),
        settings(100),
      );
    });

    it('JSON of the wrong shape, deep nesting and invalid UTF-8 are refused', async () => {
      const shapes = fc.oneof(
        hostileValue.map(encode),
        fc.constantFrom(10_000, 60_000).map((d) => deepArray(d).text),
        fc.constantFrom(10_000, 30_000).map((d) => deepObject(d).text),
        fc.constantFrom(
          Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]).toString('latin1'),
          Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]).toString('latin1'),
        ),
      );
      await fc.assert(
        fc.asyncProperty(route(), shapes, async (r, text) => {
          // The invalid UTF-8 cases are bytes written as latin1 characters: sent as those bytes.
          const body = /[\x80-\xff]/.test(text) && [...text].every((c) => c.charCodeAt(0) <= 0xff) ? Buffer.from(text, 'latin1') : text;
          // Cancel takes no body: whatever it is sent, it must not crash (the job is already cancelled).
          const verdict: Verdict = r.path.endsWith('/cancel') ? 'either' : 'refuse';
          await attempt(`${r.method} ${r.path.replace(/[0-9a-f-]{36}/g, '{id}')} wrong shape`, { ...r, key: acme, headers: JSON_TYPE, body }, verdict);
        }),
        settings(60),
      );
    });

    it('a body over the size limit is a 413 naming the limit', async () => {
      await fc.assert(
        fc.asyncProperty(route(), fc.integer({ min: 1, max: 3 * MAX_BODY_BYTES }), fc.constantFrom('a', '😀', '\u0000'), async (r, extra, unit) => {
          const filler = unit.repeat(Math.ceil((MAX_BODY_BYTES + extra) / Buffer.byteLength(unit)));
          const body = JSON.stringify({ model: BASE, messages: [{ role: 'user', content: filler }] });
          if (r.path === '/v1/files') return; // multipart routes have their own limit, below
          await attempt(`${r.method} ${r.path.replace(/[0-9a-f-]{36}/g, '{id}')} oversized`, { ...r, key: acme, headers: JSON_TYPE, body }, 'refuse', new RegExp(`larger than the limit of ${MAX_BODY_BYTES} bytes`));
        }),
        settings(20),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('ids in paths', () => {
    const pct = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
    const hostileId = () =>
      fc.oneof(
        fc.constantFrom(
          '..%2F..%2Fetc%2Fpasswd',
          '..%2f..%2f..%2f..%2fetc%2fpasswd',
          '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
          '..%5C..%5Cwindows%5Cwin.ini',
          '..',
          '...',
          '%2e%2e',
          '%00',
          `${ids.model}%00`,
          '%',
          '%zz',
          '%E0%A4%A',
          '%ED%A0%80',
          '%C0%AE%C0%AE%C0%AF',
          '%F0%9F%98%80',
          '%E2%80%AE',
          '\u00e9',
          'null',
          'undefined',
          '0',
          '-1',
          '1e308',
          'NaN',
          '00000000-0000-0000-0000-000000000000',
          'ffffffff-ffff-ffff-ffff-ffffffffffff',
          `file-${'A'.repeat(24)}`,
          `file-${'a'.repeat(25)}`,
          pct("'; DROP TABLE models; --"),
          'a'.repeat(8_000),
          ids.theirModel,
          ids.theirFile,
          ids.theirJob,
          ids.theirCheckpoint,
          ids.theirKey,
          ids.theirFineTuningJob,
          ids.theirResponse,
          ids.theirOutputItem,
          ids.theirConversation,
          `ftjob-${'0'.repeat(32)}`,
          `ftjob-${ids.job.replaceAll('-', '')}`,
          ids.file,
          ids.job,
          ids.checkpoint,
        ),
        fc.uuid(),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(pct),
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 20 }).map(encodeURIComponent),
      );
    const ROUTES: [string, (id: string) => string, unknown?, boolean?][] = [
      ['GET', (id) => `/v1/preview/models/${id}/checkpoints`],
      ['DELETE', (id) => `/v1/preview/models/${id}/checkpoints`, { steps: [0] }],
      ['DELETE', (id) => `/v1/preview/models/${id}`],
      ['POST', (id) => `/v1/preview/models/${id}/log`, { split: 'fuzz', trajectory_groups: [{ trajectories: [{ reward: 1 }] }] }],
      ['GET', (id) => `/v1/models/${id}`],
      ['GET', (id) => `/v1/files/${id}`],
      ['GET', (id) => `/v1/files/${id}/content`],
      ['DELETE', (id) => `/v1/files/${id}`],
      ['GET', (id) => `/v1/preview/training-jobs/${id}`],
      ['GET', (id) => `/v1/preview/training-jobs/${id}/events`],
      ['POST', (id) => `/v1/preview/training-jobs/${id}/cancel`],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}`],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}/events`],
      ['GET', (id) => `/v1/fine_tuning/jobs/${id}/checkpoints`],
      ['POST', (id) => `/v1/fine_tuning/jobs/${id}/cancel`],
      ['GET', (id) => `/v1/responses/${id}`],
      ['DELETE', (id) => `/v1/responses/${id}`],
      ['GET', (id) => `/v1/responses/${id}/input_items`],
      ['GET', (id) => `/v1/conversations/${id}`],
      ['POST', (id) => `/v1/conversations/${id}`, { metadata: {} }],
      ['DELETE', (id) => `/v1/conversations/${id}`],
      ['GET', (id) => `/v1/conversations/${id}/items`],
      ['POST', (id) => `/v1/conversations/${id}/items`, { items: [{ role: 'user', content: 'x' }] }],
      ['DELETE', (id) => `/v1/conversations/${id}/items/${id}`],
      ['GET', (id) => `/v1/chat/completions/${id}`],
      ['GET', (id) => `/v1/chat/completions/${id}/messages`],
      ['POST', (id) => `/v1/chat/completions/${id}`, { metadata: {} }],
      ['DELETE', (id) => `/v1/chat/completions/${id}`],
      // The console's session, not a bearer key, authenticates this one.
      ['DELETE', (id) => `/console/api/keys/${id}`, undefined, true],
    ];

    it('an id that is not one of the caller\'s is a 404 (or 400 when it cannot be decoded), never a 5xx', async () => {
      const own = new Set([ids.model, ids.trainedModel, ids.file, ids.job]);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...ROUTES), hostileId(), async ([method, path, body, console], id) => {
          const r = { method, path: path(id) };
          // Our own ids on their own route would succeed (and some would delete): only the mismatched ones are sent.
          if (own.has(id) && ((id === ids.model && r.path.includes('/models/')) || (id === ids.file && r.path.includes('/files/')) || (id === ids.job && r.path.includes('/training-jobs/')))) return;
          const answer = await attempt(
            `${method} ${path('{id}')}`,
            {
              ...r,
              key: console ? undefined : acme,
              headers: { ...(body === undefined ? {} : JSON_TYPE), ...(console ? consoleHeaders : {}) },
              body: body === undefined ? undefined : JSON.stringify(body),
            },
            'refuse',
          );
          if (answer.status === 404) {
            const text = answer.text;
            if (!/not found|No such|No route|does not exist/i.test(text)) throw new Error(`404 without saying what was not found: ${text.slice(0, 300)}`);
          } else if (answer.status !== 400 && answer.status !== 422) {
            throw new Error(`${method} ${r.path.slice(0, 100)}: expected 404 (or 400/422), got ${answer.status} ${answer.text.slice(0, 300)}`);
          }
        }),
        settings(200),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('query strings', () => {
    const pct = (s: string) => encodeURIComponent(s.replace(LONE_SURROGATE, '\ufffd')).replace(/'/g, '%27');
    const queryValue = fc.oneof(
      fc.constantFrom('', '0', '-1', '101', '1e308', '1e2', 'NaN', 'Infinity', '1.5', '0x10', '%205', '5%20', 'asc%20', 'DESC', 'desc%00', '%', '%zz', '%00', '%ED%A0%80'),
      // Whole query strings past Node's 16 KB header limit are a 431 (see the raw socket test).
      hostileString.map(pct).filter((v) => v.length < 4_000),
      fc.integer().map(String),
    );

    it('GET .../checkpoints?limit&order&after', async () => {
      const limitOk = (v: string) => Number.isInteger(Number(decodeURIComponentSafe(v))) && Number(decodeURIComponentSafe(v)) >= 1 && Number(decodeURIComponentSafe(v)) <= 100;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('limit', 'order', 'after', 'limit&limit', 'after&after'),
          fc.oneof(queryValue, fc.constantFrom(ids.checkpoint, ids.theirCheckpoint, ids.events[0] ?? 'x', 'asc', 'desc', '1', '100')),
          async (param, value) => {
            const repeated = param.includes('&');
            const name = param.split('&')[0];
            const query = repeated ? `${name}=${value}&${name}=${value}` : `${name}=${value}`;
            const decoded = decodeURIComponentSafe(value);
            const valid =
              !repeated &&
              decoded !== undefined &&
              (name === 'limit' ? limitOk(value) : name === 'order' ? ['asc', 'desc'].includes(decoded) : decoded === ids.checkpoint);
            await attempt(`GET /v1/preview/models/{id}/checkpoints ?${name}`, { method: 'GET', path: `/v1/preview/models/${ids.model}/checkpoints?${query}`, key: acme }, valid ? 'accept' : 'refuse', new RegExp(name));
          },
        ),
        settings(60),
      );
    });

    it('GET .../events?limit&after, JSON and as an event stream', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('limit', 'after'),
          fc.oneof(queryValue, fc.constantFrom(ids.theirEvent, ids.checkpoint, ids.job)),
          fc.boolean(),
          async (name, value, sse) => {
            const decoded = decodeURIComponentSafe(value);
            const valid = decoded !== undefined && name === 'limit' && Number.isInteger(Number(decoded)) && Number(decoded) >= 1 && Number(decoded) <= 100;
            // A valid stream request of a finished job would stay open; only refused ones are streamed.
            if (sse && valid) return;
            const headers: Record<string, string> = sse ? { accept: 'text/event-stream' } : {};
            await attempt(`GET /v1/preview/training-jobs/{id}/events ?${name}${sse ? ' (SSE)' : ''}`, { method: 'GET', path: `/v1/preview/training-jobs/${ids.job}/events?${name}=${value}`, key: acme, headers }, valid ? 'accept' : 'refuse', new RegExp(name));
          },
        ),
        settings(40),
      );
    });

    it('GET /v1/preview/training-jobs?model_id&after&limit', async () => {
      const UUID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/i;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('model_id', 'after', 'limit'),
          fc.oneof(queryValue, fc.constantFrom(ids.model, ids.theirModel, ids.job, ids.theirJob, ids.model.toUpperCase(), '1', '100')),
          async (name, value) => {
            const decoded = decodeURIComponentSafe(value);
            const valid =
              decoded !== undefined &&
              (name === 'limit'
                ? Number.isInteger(Number(decoded)) && Number(decoded) >= 1 && Number(decoded) <= 100
                : name === 'model_id'
                  ? UUID.test(decoded)
                  : decoded === ids.job);
            await attempt(`GET /v1/preview/training-jobs ?${name}`, { method: 'GET', path: `/v1/preview/training-jobs?${name}=${value}`, key: acme }, valid ? 'accept' : 'refuse', new RegExp(name));
          },
        ),
        settings(40),
      );
    });

    it('GET .../trajectories?limit&order&after&step&split&job_id&min_reward&max_reward', async () => {
      const UUID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/i;
      const oracles: Record<string, (decoded: string) => boolean> = {
        limit: (v) => Number.isInteger(Number(v)) && Number(v) >= 1 && Number(v) <= 100,
        order: (v) => v === 'asc' || v === 'desc',
        // No trajectory id is among the values: a checkpoint's or a job's id is no cursor here.
        after: () => false,
        step: (v) => Number.isInteger(Number(v)) && Number(v) >= 0 && Number(v) <= 2_147_483_647,
        split: (v) => /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/.test(v),
        job_id: (v) => UUID.test(v),
        min_reward: (v) => Number.isFinite(Number(v)),
        max_reward: (v) => Number.isFinite(Number(v)),
      };
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...Object.keys(oracles)),
          fc.oneof(queryValue, fc.constantFrom(ids.checkpoint, ids.job, ids.theirJob, 'train', 'val', 'asc', '1', '1e10', '2147483648')),
          async (name, value) => {
            const decoded = decodeURIComponentSafe(value);
            const valid = decoded !== undefined && oracles[name](decoded);
            await attempt(`GET /v1/preview/models/{id}/trajectories ?${name}`, { method: 'GET', path: `/v1/preview/models/${ids.model}/trajectories?${name}=${value}`, key: acme }, valid ? 'accept' : 'refuse', new RegExp(name));
          },
        ),
        settings(60),
      );
    });

    it('Last-Event-ID of the event stream', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(hostileString, fc.constantFrom(ids.theirEvent, ids.checkpoint)).filter((s) => s.length < 8_000 && /^[\x20-\x7e\x80-\xff]+$/.test(s) && s.trim() !== ''), async (lastEventId) => {
          await attempt('GET /v1/preview/training-jobs/{id}/events Last-Event-ID', { method: 'GET', path: `/v1/preview/training-jobs/${ids.job}/events`, key: acme, headers: { accept: 'text/event-stream', 'last-event-id': lastEventId } }, 'refuse', /after/);
        }),
        settings(20),
      );
    });

    it('GET /v1/fine_tuning/jobs?after&limit&metadata, and the after of its events and checkpoints', async () => {
      const own = { ftjob: ids.fineTuningJob, ftevent: 'none', ftckpt: 'none' };
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('', '/events', '/checkpoints'),
          fc.constantFrom('after', 'limit', 'metadata', 'metadata[team]'),
          fc.oneof(queryValue, fc.constantFrom(ids.fineTuningJob, ids.theirFineTuningJob, ids.job, `ftevent-${'0'.repeat(32)}`, 'null', '1', '100')),
          async (sub, name, value) => {
            const list = sub === '' ? '/v1/fine_tuning/jobs' : `/v1/fine_tuning/jobs/${ids.fineTuningJob}${sub}`;
            const decoded = decodeURIComponentSafe(value);
            const prefix = sub === '' ? 'ftjob' : sub === '/events' ? 'ftevent' : 'ftckpt';
            const valid =
              decoded !== undefined &&
              (name === 'limit'
                ? Number.isInteger(Number(decoded)) && Number(decoded) >= 1 && Number(decoded) <= 100
                : name === 'after'
                  ? decoded === own[prefix]
                  : name === 'metadata'
                    ? sub !== '' || decoded === '' || decoded === 'null'
                    : sub !== '' || storableText(decoded));
            const query = `${name === 'metadata[team]' ? 'metadata%5Bteam%5D' : name}=${value}`;
            // A filter value that is not UTF-8 is read as the query parser decodes it (U+FFFD for what is not): it matches nothing, or is refused.
            const verdict: Verdict = valid ? 'accept' : name === 'metadata[team]' && decoded === undefined ? 'either' : 'refuse';
            await attempt(`GET ${list.replace(ids.fineTuningJob, '{id}')} ?${name}`, { method: 'GET', path: `${list}?${query}`, key: acme }, verdict, /after|limit|metadata/);
          },
        ),
        settings(60),
      );
    });

    it('GET /v1/chat/completions?after&limit&order&model&metadata', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('after', 'limit', 'order', 'model', 'metadata', 'metadata[run]'),
          fc.oneof(queryValue, fc.constantFrom(`chatcmpl-${ids.job}`, 'asc', 'desc', 'null', '1', '100', BASE)),
          async (name, value) => {
            const decoded = decodeURIComponentSafe(value);
            // acme has no stored completion here: any `after` names none.
            const valid =
              decoded !== undefined &&
              (name === 'limit'
                ? Number.isInteger(Number(decoded)) && Number(decoded) >= 1 && Number(decoded) <= 100
                : name === 'order'
                  ? decoded === 'asc' || decoded === 'desc'
                  : name === 'model'
                    ? storableText(decoded) && decoded.length <= 1024
                    : name === 'metadata'
                      ? decoded === '' || decoded === 'null'
                      : name === 'metadata[run]' && storableText(decoded));
            const query = `${name === 'metadata[run]' ? 'metadata%5Brun%5D' : name}=${value}`;
            // Text that is not UTF-8 is read as the query parser decodes it (U+FFFD for what is not): it matches nothing, or is refused.
            const verdict: Verdict = valid ? 'accept' : (name === 'metadata[run]' || name === 'model') && decoded === undefined ? 'either' : 'refuse';
            const answer = await attempt(`GET /v1/chat/completions ?${name}`, { method: 'GET', path: `/v1/chat/completions?${query}`, key: acme }, verdict, /after|limit|order|model|metadata/);
            if (answer.status === 200) expect((answer.json as { data: unknown[] }).data).toEqual([]);
          },
        ),
        settings(60),
      );
    });

    it('GET /v1/files?purpose', async () => {
      await fc.assert(
        fc.asyncProperty(queryValue, fc.boolean(), async (value, repeated) => {
          const query = repeated ? `purpose=${value}&purpose=${value}` : `purpose=${value}`;
          const decoded = decodeURIComponentSafe(value);
          const verdict: Verdict = !repeated && decoded !== undefined && /^[a-z_-]{1,64}$/.test(decoded) ? 'accept' : 'refuse';
          await attempt('GET /v1/files ?purpose', { method: 'GET', path: `/v1/files?${query}`, key: acme }, verdict, /purpose|decode/i);
        }),
        settings(40),
      );
    });

    it('routes without parameters ignore any query', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('/v1/models', '/v1/preview/base-models', '/v1/preview/models', '/v1/health', '/console/api/session', '/console/api/keys'),
          fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map(encodeURIComponent),
          async (path, junk) => {
            const headers = path.startsWith('/console/') ? consoleHeaders : {};
            await attempt(`GET ${path} ?junk`, { method: 'GET', path: `${path}?${junk}=${junk}&limit=-1&__proto__[x]=1`, key: path.startsWith('/console/') ? undefined : acme, headers }, 'accept');
          },
        ),
        settings(20),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('headers and methods', () => {
    const headerText = hostileString.filter((s) => s.length < 8_000 && /^[\x20-\x7e\x80-\xff]*$/.test(s));

    it('Authorization: anything but a valid key is a 401 saying why; public routes do not care', async () => {
      const authorization = fc.oneof(
        headerText,
        headerText.map((s) => `Bearer ${s}`),
        fc.constantFrom(`Bearer ${acme}x`, `Bearer ${acme.slice(0, -1)}`, `Bearer  ${acme} extra`, `Basic ${Buffer.from(`acme:${acme}`).toString('base64')}`, `Bearer ${'x'.repeat(12_000)}`, 'Bearer', 'bearer ', `Token ${acme}`),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(['GET', '/v1/models'], ['GET', '/v1/preview/base-models'], ['POST', '/v1/chat/completions'], ['GET', `/v1/files/${ids.file}`], ['GET', '/v1/health'], ['GET', '/v1/system-check']),
          authorization,
          async ([method, path], value) => {
            const isPublic = path === '/v1/health' || path === '/v1/system-check';
            await attempt(`${method} ${path.replace(/file-[A-Za-z0-9]{24}/, '{id}')} Authorization`, { method, path, headers: { authorization: value, ...(method === 'POST' ? JSON_TYPE : {}) }, body: method === 'POST' ? '{}' : undefined }, isPublic ? 'accept' : 'refuse', /API key|Authorization/i);
          },
        ),
        settings(40),
      );
    });

    it('Content-Type, Content-Encoding, Idempotency-Key and X-Request-Id', async () => {
      const body = JSON.stringify({ project: 'fuzz', name: 'target', base_model: BASE, return_existing: true });
      const cases = fc.oneof(
        fc.tuple(
          fc.constant('content-type'),
          fc.oneof(
            headerText,
            fc.constantFrom('text/plain', 'application/json; charset=utf-16', 'application/json; charset=bogus', 'application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; boundary=x', 'application/xml', 'application/json, text/plain', 'APPLICATION/JSON', 'application/json; charset=utf-8'),
          ),
        ),
        fc.tuple(fc.constant('content-encoding'), fc.constantFrom('gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip', 'identity')),
        fc.tuple(fc.constant('idempotency-key'), headerText.filter((s) => !/^[\x21-\x7e]{1,255}$/.test(s))),
        fc.tuple(fc.constant('x-request-id'), headerText),
      );
      await fc.assert(
        fc.asyncProperty(cases, async ([name, value]) => {
          const jsonType = /^application\/json(;\s*charset=utf-8)?$/i.test(value.trim());
          const verdict: Verdict =
            name === 'x-request-id' || (name === 'content-encoding' && value === 'identity') || (name === 'content-type' && jsonType) ? 'accept' : 'refuse';
          const headers = { 'content-type': 'application/json', [name]: value };
          const answer = await attempt(`POST /v1/preview/models ${name}`, { method: 'POST', path: '/v1/preview/models', key: acme, headers, body }, verdict);
          const requestId = String(answer.headers['x-request-id']);
          if (!/^[A-Za-z0-9._:-]{1,128}$/.test(requestId)) throw new Error(`x-request-id ${JSON.stringify(requestId)} echoed unsanitised`);
        }),
        settings(40),
      );
    });

    it('methods a route does not have are a 404 naming the route', async () => {
      const paths = ['/v1/chat/completions', '/v1/models', '/v1/preview/models', `/v1/preview/models/${ids.model}/checkpoints`, '/v1/files', `/v1/preview/training-jobs/${ids.job}`, '/v1/health', '/v1/system-check'];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...paths), fc.constantFrom('PUT', 'PATCH', 'TRACE', 'PROPFIND', 'PURGE', 'LINK'), async (path, method) => {
          await attempt(`${method} (any route)`, { method, path, key: acme }, 'refuse', /No route/);
        }),
        settings(20),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('multipart uploads', () => {
    it('oversized, malformed, misnamed and mislabelled uploads are refused, storing nothing', async () => {
      const traversalName = fc.constantFrom('../../../etc/passwd', '..\\..\\evil.jsonl', '/etc/passwd', '....//....//x', 'a/../../b', '%2e%2e%2fx', '\u202eldnoj.exe', '😀.jsonl', 'x'.repeat(300));
      const upload = fc.oneof(
        fc.record({ kind: fc.constant('oversized' as const), extra: fc.integer({ min: 1, max: 4 * MAX_UPLOAD_BYTES }), filename: traversalName }),
        fc.record({ kind: fc.constant('purpose' as const), purpose: hostileString.filter((s) => s !== 'fine-tune'), filename: traversalName }),
        fc.record({ kind: fc.constant('no-file' as const), filename: traversalName }),
        fc.record({ kind: fc.constant('two-files' as const), filename: traversalName }),
        fc.record({ kind: fc.constant('wrong-field' as const), field: fc.oneof(hostileString.filter((s) => s !== 'file' && /^[\x20-\x7e]+$/.test(s) && !/["\\]/.test(s)), fc.constantFrom('files', 'file[]', 'upload')), filename: traversalName }),
        fc.record({ kind: fc.constant('truncated' as const), cut: fc.integer({ min: 1, max: 200 }), filename: traversalName }),
        fc.record({ kind: fc.constant('no-boundary' as const), filename: traversalName }),
        fc.record({ kind: fc.constant('control-in-name' as const), filename: fc.constantFrom('a%00b.jsonl', '%0D%0ASet-Cookie%3A%20x%3D1', '%07bell', 'tab%09name', '%7f') }),
        fc.record({ kind: fc.constant('huge-field' as const), filename: traversalName }),
        // multer takes a part with an empty filename for no file at all.
        fc.record({ kind: fc.constant('empty-filename' as const), filename: fc.constant('') }),
      );
      const expectations: Record<string, RegExp> = {
        oversized: new RegExp(`upload limit of ${MAX_UPLOAD_BYTES} bytes`),
        purpose: /purpose/,
        'no-file': /file is required/,
        'two-files': /file/i,
        // A name too long for busboy's part-header limit is a malformed part header.
        'wrong-field': /field|part header/i,
        truncated: /multipart|form|end/i,
        'no-boundary': /boundary|multipart/i,
        'control-in-name': /filename/,
        'huge-field': /field|too long|value/i,
        'empty-filename': /file is required/,
      };
      await fc.assert(
        fc.asyncProperty(upload, async (u) => {
          const file = (filename: string, data: string | Buffer = DATASET): Part => ({ name: 'file', filename, contentType: 'application/jsonl', data });
          let parts: Part[] = [{ name: 'purpose', data: 'fine-tune' }, file(u.filename)];
          let contentType: string | undefined;
          if (u.kind === 'oversized') parts = [{ name: 'purpose', data: 'fine-tune' }, file(u.filename, Buffer.alloc(MAX_UPLOAD_BYTES + u.extra, 0x41))];
          if (u.kind === 'purpose') parts = [{ name: 'purpose', data: u.purpose }, file(u.filename)];
          if (u.kind === 'no-file') parts = [{ name: 'purpose', data: 'fine-tune' }];
          if (u.kind === 'two-files') parts.push(file(`${u.filename}2`));
          if (u.kind === 'wrong-field') parts = [{ name: 'purpose', data: 'fine-tune' }, { ...file(u.filename), name: u.field }];
          if (u.kind === 'control-in-name') parts = [{ name: 'purpose', data: 'fine-tune' }, { name: 'file', disposition: `form-data; name="file"; filename*=UTF-8''${u.filename}`, data: DATASET }];
          if (u.kind === 'huge-field') parts = [{ name: 'purpose', data: 'fine-tune'.padEnd(2 * 1024 * 1024, ' ') }, file(u.filename)];
          const built = multipart(parts);
          let body = built.body;
          contentType = built.contentType;
          if (u.kind === 'truncated') body = body.subarray(0, Math.max(1, body.length - u.cut - 10));
          if (u.kind === 'no-boundary') contentType = 'multipart/form-data';
          await attempt(`POST /v1/files ${u.kind}`, { method: 'POST', path: '/v1/files', key: acme, headers: { 'content-type': contentType }, body }, 'refuse', expectations[u.kind]);
        }),
        settings(80),
      );
    });

    it('any filename is only a label: accepted ones round-trip exactly and are stored by the digest of their content, the rest are refused naming it', async () => {
      const pct = (name: string) => [...Buffer.from(name, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
      const names = fc.oneof(
        hostileString.filter((s) => s.length <= 300),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
        fc.constantFrom('../../../etc/passwd', '..', '.', 'a/..', 'C:\\Windows\\x.jsonl', 'x%22y%0Az', 'quote"back\\slash', 'é.jsonl', 'x'.repeat(255), 'x'.repeat(256)),
      );
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          // What the server can see of the name: UTF-8 as sent, multer's basename and its reversal of WHATWG escapes.
          const sent = name.replace(LONE_SURROGATE, '\ufffd');
          const label = (sent.split(/[/\\]/).pop() ?? '').replace(/%0A|%0D|%22/gi, (m) => ({ '%0A': '\n', '%0D': '\r' })[m.toUpperCase()] ?? '"');
          const data = `{"name":${JSON.stringify(sent)}}`;
          const { body, contentType } = multipart([
            { name: 'purpose', data: 'fine-tune' },
            { name: 'file', disposition: `form-data; name="file"; filename*=UTF-8''${pct(sent)}`, data },
          ]);
          const upload: HostileRequest = { method: 'POST', path: '/v1/files', key: acme, headers: { 'content-type': contentType }, body };
          if (label === '' || label === '.' || label === '..') return void (await attempt('POST /v1/files filename', upload, 'refuse', /file is required/));
          const acceptable = label.length <= 255 && ![...label].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f');
          const answer = await attempt('POST /v1/files filename', upload, acceptable ? 'accept' : 'refuse', /filename/);
          if (!acceptable) return;
          const file = answer.json as { id: string; filename: string };
          if (file.filename !== label) throw new Error(`filename ${JSON.stringify(label)} came back as ${JSON.stringify(file.filename)}`);
          const content = await attempt('GET /v1/files/{id}/content', { method: 'GET', path: `/v1/files/${file.id}/content`, key: acme }, 'accept');
          if (content.text !== data) throw new Error(`content of ${file.id} changed`);
          const disposition = String(content.headers['content-disposition']);
          if (decodeURIComponent(disposition.split("filename*=UTF-8''")[1] ?? '') !== label) throw new Error(`Content-Disposition ${disposition} does not carry the name`);
          // Stored by the digest of its content, whatever its name.
          const digest = createHash('sha256').update(data).digest('hex');
          const stored = Object.keys(filesUnder(stack.artifactsDir)).filter((path) => path.endsWith(digest));
          if (stored.length !== 1 || stored[0] !== `objects/sha256/${digest.slice(0, 2)}/${digest}`) throw new Error(`stored at ${stored.join(', ')}`);
          await attempt('DELETE /v1/files/{id}', { method: 'DELETE', path: `/v1/files/${file.id}`, key: acme }, 'accept');
        }),
        settings(30),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('bytes no HTTP library would send', () => {
    it('are answered with a 4xx JSON error, or the connection is closed, and nothing breaks', async () => {
      const requests = fc.oneof(
        fc.constantFrom(
          'GARBAGE\r\n\r\n',
          'GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n',
          'GET /v1/health\r\n\r\n',
          'GET  /v1/health HTTP/1.1\r\nHost: x\r\n\r\n',
          'GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n',
          'GET /v1/health HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n',
          'GET /v1/health HTTP/1.1\r\nHost: x\r\n X: folded\r\n\r\n',
          'POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n{}\r\n0\r\n\r\n',
          'POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
          'POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
          'POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}',
          'POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}',
          'GET /v1/health/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          'GET http://evil.example/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          'GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        ),
        fc.integer({ min: 17_000, max: 70_000 }).map((n) => `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(n)}\r\n\r\n`),
        fc.integer({ min: 17_000, max: 70_000 }).map((n) => `GET /v1/${'a'.repeat(n)} HTTP/1.1\r\nHost: x\r\n\r\n`),
        fc.integer({ min: 120, max: 400 }).map((n) => `GET /v1/health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: n }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nConnection: close\r\n\r\n`),
        fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 200 }),
      );
      await fc.assert(
        fc.asyncProperty(requests, async (bytes) => {
          const answer = await sendRaw(stack.baseUrl, bytes);
          tally.record('raw socket', answer.status ?? 0);
          if (answer.status === null) return; // closed without a word: acceptable for bytes that are not HTTP at all
          if (answer.status >= 500) throw new Error(`raw request answered ${answer.status}: ${answer.head}\n${answer.body.slice(0, 300)}`);
          if (answer.status >= 400) {
            if (!/content-type: application\/json/i.test(answer.head)) throw new Error(`raw request answered ${answer.status} without JSON: ${answer.head}`);
            const parsed = JSON.parse(answer.body) as { detail?: unknown; error?: { message?: unknown } };
            if (!parsed.detail && !parsed.error?.message) throw new Error(`raw request answered ${answer.status} without a message: ${answer.body}`);
          }
        }),
        settings(40),
      );
    });
  });

  // -------------------------------------------------------------------------------------

  describe('afterwards', () => {
    it('every process is still running and the system check is green', async () => {
      expect(stack.exitedApps()).toEqual([]);
      const check = await waitFor(async () => {
        const res = await stack.fetch('/v1/system-check');
        return res.status === 200 && ((await res.json()) as { failing: string[] });
      }, { what: 'a green system check', timeoutMs: 30_000 });
      expect(check.failing).toEqual([]);
    });

    it('stored data is exactly as before: every row of every table, every artifact file', async () => {
      expect(await storedState(stack)).toEqual(before);
    });

    it('the owner still reads everything it had', async () => {
      expect((await stack.call('GET', `/v1/preview/models/${ids.model}/checkpoints`, { key: acme })).status).toBe(200);
      expect((await stack.call('GET', `/v1/files/${ids.file}`, { key: acme })).status).toBe(200);
      expect((await stack.call('GET', `/v1/preview/training-jobs/${ids.job}`, { key: acme })).status).toBe(200);
      expect((await stack.call('GET', `/v1/files/${ids.theirFile}`, { key: globex })).status).toBe(200);
    });
  });
});

const LONE_SURROGATE = /\p{Cs}/gu;

function wellFormed(s: string): boolean {
  return !/\p{Cs}/u.test(s);
}

function decodeURIComponentSafe(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}
