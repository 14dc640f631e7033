import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join, relative } from 'node:path';
import type { Stack } from './stack';

// HTTP as a hostile client speaks it: paths sent byte for byte (no normalisation of `..`,
// no re-encoding), raw bodies, raw multipart, raw sockets; and what a well-behaved server
// must answer to all of it.

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body when it is JSON, else undefined. */
  json: unknown;
}

export interface HostileRequest {
  method: string;
  /** Sent exactly as given, after the host. */
  path: string;
  key?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

const NO_ANSWER_MS = 30_000;

/** One request on its own connection; fails only when there is no answer at all. */
export function send(baseUrl: string, req: HostileRequest): Promise<Answer> {
  const { hostname, port } = new URL(baseUrl);
  const headers: Record<string, string> = { connection: 'close', ...req.headers };
  if (req.key !== undefined) headers['authorization'] = `Bearer ${req.key}`;
  if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
  return new Promise((resolve, reject) => {
    let answered = false;
    const outgoing = request({ host: hostname, port, method: req.method, path: req.path, headers, agent: false }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: parseJson(res.headers['content-type'], text) });
      });
    });
    outgoing.setTimeout(NO_ANSWER_MS, () => outgoing.destroy(new Error(`no answer to ${req.method} ${req.path.slice(0, 200)} within ${NO_ANSWER_MS} ms`)));
    // The server may answer (413) and close before it has read the whole body: the answer counts.
    outgoing.on('error', (err) => {
      if (!answered) reject(err);
    });
    outgoing.end(req.body);
  });
}

function parseJson(contentType: string | undefined, text: string): unknown {
  if (!/application\/json/.test(contentType ?? '')) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface RawAnswer {
  /** null when the server closed the connection without a status line. */
  status: number | null;
  head: string;
  body: string;
}

/** Bytes straight onto a socket: for what no HTTP client library would agree to send. */
export function sendRaw(baseUrl: string, bytes: string | Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) });
    const done = () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const split = raw.indexOf('\r\n\r\n');
      const head = split < 0 ? raw : raw.slice(0, split);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ status: match ? Number(match[1]) : null, head, body: split < 0 ? '' : Buffer.from(raw.slice(split + 4), 'latin1').toString('utf8') });
    };
    socket.setTimeout(10_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', done);
    socket.end(bytes);
  });
}

export interface Part {
  name: string;
  /** The whole Content-Disposition value, when the test needs a hand-made one. */
  disposition?: string;
  filename?: string;
  contentType?: string;
  data: string | Buffer;
}

/** A multipart/form-data body built by hand, so that names, filenames and framing can be anything. */
export function multipart(parts: Part[], boundary = `----hostile${Math.random().toString(36).slice(2)}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = part.disposition ?? `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
    let head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n`;
    if (part.contentType) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`, 'utf8'), Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Every path under /v1 but the preview (training) and health routes, unknown ones included. */
const OPENAI_ROUTE = /^\/v1(\/(?!(preview|health|system-check)([/?]|$))|\?|$)/;

/** What an answer should be: refused (4xx naming the problem), accepted (2xx), or either. */
export type Verdict = 'refuse' | 'accept' | 'either';

export class UnexpectedAnswer extends Error {}

function unexpected(why: string, req: { method: string; path: string }, answer: Answer): never {
  const body = answer.text.length > 600 ? `${answer.text.slice(0, 600)}... (${answer.text.length} chars)` : answer.text;
  throw new UnexpectedAnswer(`${req.method} ${req.path.slice(0, 200)}: ${why}; got HTTP ${answer.status} ${body}`);
}

/**
 * The error of a refused request, in the envelope of its route family: OpenAI's
 * `{error: {message, type, param, code}}` under /v1 (chat, models, files, unknown routes), `{detail}` (a message,
 * or FastAPI's list of `{loc, msg, type}`) for the rest. Returns message, param and locations
 * as one text, to check that the answer names the problem.
 */
export function problemOf(req: { method: string; path: string }, answer: Answer): string {
  if (!/application\/json/.test(String(answer.headers['content-type']))) unexpected('error is not JSON', req, answer);
  const body = answer.json as Record<string, unknown> | undefined;
  if (OPENAI_ROUTE.test(req.path)) {
    const error = body?.['error'] as Record<string, unknown> | undefined;
    if (typeof error?.['message'] !== 'string' || !error['message'] || typeof error['type'] !== 'string' || !('code' in error) || !('param' in error)) {
      unexpected('not an OpenAI error envelope', req, answer);
    }
    return `${error['message']} ${error['param'] ?? ''}`;
  }
  const detail = body?.['detail'];
  if (typeof detail === 'string' && detail) return detail;
  if (
    Array.isArray(detail) &&
    detail.length > 0 &&
    detail.every((d) => Array.isArray(d?.loc) && typeof d?.msg === 'string' && d.msg && typeof d?.type === 'string')
  ) {
    return detail.map((d: { loc: unknown[]; msg: string }) => `${d.loc.join('.')}: ${d.msg}`).join('; ');
  }
  return unexpected('not a {detail} error envelope', req, answer);
}

/**
 * The property every answer must have: never a 5xx; a refusal is a 4xx JSON error in the
 * route family's envelope whose message or location matches `names`.
 */
export function check(req: { method: string; path: string }, answer: Answer, verdict: Verdict, names?: RegExp): void {
  if (answer.status >= 500) unexpected('a 5xx is a bug', req, answer);
  const ok = answer.status >= 200 && answer.status < 300;
  if (verdict === 'accept') {
    if (!ok) unexpected('expected a 2xx for a valid request', req, answer);
    return;
  }
  if (ok && verdict === 'either') return;
  if (answer.status < 400 || answer.status > 499) unexpected('expected a 4xx', req, answer);
  const problem = problemOf(req, answer);
  if (names && !names.test(problem)) unexpected(`the error does not name the problem (${names})`, req, answer);
}

/** Counts of statuses per route, for the report. */
export class Tally {
  private readonly counts = new Map<string, Map<number, number>>();

  record(route: string, status: number): void {
    const byStatus = this.counts.get(route) ?? new Map<number, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    this.counts.set(route, byStatus);
  }

  get total(): number {
    return [...this.counts.values()].reduce((sum, m) => sum + [...m.values()].reduce((a, b) => a + b, 0), 0);
  }

  toString(): string {
    return [...this.counts]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([route, m]) => `${route}: ${[...m].sort(([a], [b]) => a - b).map(([s, n]) => `${s}x${n}`).join(' ')}`)
      .join('\n');
  }
}

/** Columns that change on every authenticated request and are not data: left out of snapshots. */
const VOLATILE_COLUMNS: Record<string, string[]> = { api_keys: ['last_used_at'] };

/**
 * Everything the system stores: every row of every table (but migrations' bookkeeping and
 * volatile columns) and every file under the artifact root with its digest.
 */
export async function storedState(stack: Stack): Promise<Record<string, unknown>> {
  const tables = await stack.withDatabase(async (db) => {
    const names = (
      await db.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations' ORDER BY table_name",
      )
    ).rows.map((r) => r.table_name);
    const state: Record<string, string[]> = {};
    for (const name of names) {
      const rows = (await db.query<{ row: Record<string, unknown> }>(`SELECT to_jsonb(t) AS row FROM "${name}" t`)).rows;
      state[name] = rows
        .map(({ row }) => {
          for (const column of VOLATILE_COLUMNS[name] ?? []) delete row[column];
          return JSON.stringify(row);
        })
        .sort();
    }
    return state;
  });
  return { tables, artifacts: filesUnder(stack.artifactsDir) };
}

/** Relative path to SHA-256 of every file under `root` (staging left out: it is transient by design). */
export function filesUnder(root: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== '.staging') walk(path);
      } else {
        found[relative(root, path)] = createHash('sha256').update(readFileSync(path)).digest('hex');
      }
    }
  };
  walk(root);
  return found;
}
