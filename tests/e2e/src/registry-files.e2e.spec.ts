import { sha256Of } from '@trainyard/artifacts';
import OpenAI, { toFile } from 'openai';
import { Stack } from './support/stack';

const MAX_UPLOAD_BYTES = 2 * 1024 * 1024;

describe('files, end to end through the official openai client', () => {
  let stack: Stack;
  let acme: OpenAI;
  let globex: OpenAI;
  let acmeKey: string;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) } });
    acmeKey = (await stack.createKey('acme')).key;
    const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    acme = client(acmeKey);
    globex = client((await stack.createKey('globex')).key);
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  /** The digests of every object in the artifact store (uploads are stored by their content's SHA-256). */
  const storedObjects = async () => {
    const all: string[] = [];
    for await (const object of stack.artifacts().list()) all.push(object.sha256);
    return all;
  };
  const fileRows = (id: string) => stack.withDatabase(async (db) => Number((await db.query('SELECT count(*) FROM files WHERE id = $1', [id])).rows[0].count));

  it('uploads a dataset larger than a NATS message, lists it, reads it back byte for byte and deletes it', async () => {
    const line = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello there' }] });
    const dataset = Buffer.from(Array.from({ length: 20_000 }, () => line).join('\n'));
    expect(dataset.length).toBeGreaterThan(1024 * 1024);

    const file = await acme.files.create({ file: await toFile(dataset, 'train.jsonl'), purpose: 'fine-tune' });
    expect(file).toMatchObject({ id: expect.stringMatching(/^file-/), object: 'file', bytes: dataset.length, filename: 'train.jsonl', purpose: 'fine-tune' });

    expect((await acme.files.retrieve(file.id)).bytes).toBe(dataset.length);
    const listed: string[] = [];
    for await (const f of acme.files.list()) listed.push(f.id);
    expect(listed).toContain(file.id);

    const content = Buffer.from(await (await acme.files.content(file.id)).arrayBuffer());
    expect(content.equals(dataset)).toBe(true);
    expect(await storedObjects()).toContain(sha256Of(dataset));

    expect(await acme.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    // The row goes at once; the object with the registry's sweep, once no row names it.
    expect(await fileRows(file.id)).toBe(0);
    await expect(acme.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps one entity\'s files from another: 404 on every route, absent from its list', async () => {
    const file = await acme.files.create({ file: await toFile(Buffer.from('{"messages":[]}\n'), 'mine.jsonl'), purpose: 'fine-tune' });
    await expect(globex.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(globex.files.content(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(globex.files.delete(file.id)).rejects.toMatchObject({ status: 404 });
    const theirs: string[] = [];
    for await (const f of globex.files.list()) theirs.push(f.id);
    expect(theirs).not.toContain(file.id);
    expect((await acme.files.retrieve(file.id)).id).toBe(file.id);
  });

  it('refuses a file over the upload limit with 413 in the OpenAI envelope, storing nothing', async () => {
    const before = (await storedObjects()).length;
    const error = await acme.files
      .create({ file: await toFile(Buffer.alloc(MAX_UPLOAD_BYTES + 1, 'x'), 'big.jsonl'), purpose: 'fine-tune' })
      .catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    expect(error).toMatchObject({ status: 413 });
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      message: `File is larger than the upload limit of ${MAX_UPLOAD_BYTES} bytes`,
      type: 'invalid_request_error',
    });
    expect(await storedObjects()).toHaveLength(before);
  });

  it('refuses another purpose and a request without a file with 400 naming the field', async () => {
    const wrongPurpose = await acme.files
      .create({ file: await toFile(Buffer.from('x'), 'a.jsonl'), purpose: 'assistants' })
      .catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    expect(wrongPurpose).toBeInstanceOf(OpenAI.BadRequestError);
    expect(wrongPurpose).toMatchObject({ status: 400, error: { param: 'purpose' } });

    const form = new FormData();
    form.set('purpose', 'fine-tune');
    const res = await stack.fetch('/v1/files', { method: 'POST', body: form, key: acmeKey });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param: 'file', message: expect.stringContaining('file is required') } });
  });

  it('answers an unknown file id with 404 in the OpenAI envelope', async () => {
    const res = await stack.fetch('/v1/files/file-doesnotexist', { key: acmeKey });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: { message: 'No such File object: file-doesnotexist', type: 'not_found_error', param: null, code: 'not_found' },
    });
  });

  it('replays a retried upload with the same Idempotency-Key instead of storing it twice', async () => {
    const upload = () => {
      const form = new FormData();
      form.set('purpose', 'fine-tune');
      form.set('file', new Blob(['{"messages":[]}\n']), 'once.jsonl');
      return stack.fetch('/v1/files', { method: 'POST', body: form, key: acmeKey, headers: { 'idempotency-key': 'upload-1' } });
    };
    const first = (await (await upload()).json()) as { id: string };
    const retry = await upload();
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { id: string }).id).toBe(first.id);
    expect(await fileRows(first.id)).toBe(1);
    const all: string[] = [];
    for await (const f of acme.files.list()) if (f.filename === 'once.jsonl') all.push(f.id);
    expect(all).toEqual([first.id]);
  });
});
