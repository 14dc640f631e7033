// The one way the console talks to the service. The session lives in an httpOnly cookie the
// browser sends by itself; the CSRF token lives here, in memory only (never in storage or a
// URL), and goes with every request that changes something.

/** Where the gateway mounts the console (its <base href>), and the API root beside it. */
const consoleBase = new URL('.', document.baseURI);
const apiRoot = new URL('..', consoleBase);

export const CSRF_HEADER = 'x-csrf-token';

let csrfToken: string | undefined;
let sessionLost: (() => void) | undefined;

export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** Called when the service says the session is gone (expired, signed out elsewhere, key revoked). */
export function onSessionLost(listener: () => void): void {
  sessionLost = listener;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface Reply<T> {
  body: T;
  headers: Headers;
}

type Method = 'GET' | 'POST' | 'DELETE';

async function send<T>(url: URL, method: Method, body?: unknown): Promise<Reply<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers[CSRF_HEADER] = csrfToken;
  const res = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const text = await res.text();
  const parsed: unknown = text ? safeJson(text) : null;
  if (!res.ok) {
    if (res.status === 401 && csrfToken) sessionLost?.();
    throw new ApiError(res.status, errorMessage(parsed) ?? `HTTP ${res.status}`);
  }
  return { body: parsed as T, headers: res.headers };
}

/** The public API, e.g. api('GET', 'preview/models'). */
export async function api<T>(method: Method, path: string, body?: unknown): Promise<T> {
  return (await send<T>(new URL(`v1/${path}`, apiRoot), method, body)).body;
}

/** The public API, with the reply's headers. */
export function apiWithHeaders<T>(method: Method, path: string, body?: unknown): Promise<Reply<T>> {
  return send<T>(new URL(`v1/${path}`, apiRoot), method, body);
}

/** The console's own routes: session and account settings. */
export async function consoleApi<T>(method: Method, path: string, body?: unknown): Promise<T> {
  return (await send<T>(new URL(`api/${path}`, consoleBase), method, body)).body;
}

/** For EventSource, which sends the cookie by itself (a GET needs no CSRF token). */
export function apiUrl(path: string): string {
  return new URL(`v1/${path}`, apiRoot).toString();
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The message of any of the service's error envelopes: {detail}, a 422 detail list, or OpenAI's {error}. */
export function errorMessage(body: unknown): string | undefined {
  if (typeof body === 'string') return body || undefined;
  if (!body || typeof body !== 'object') return undefined;
  const { detail, error } = body as { detail?: unknown; error?: { message?: unknown } };
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).slice(1).join('.')}: ${d.msg}`).join('; ');
  }
  if (typeof error?.message === 'string') return error.message;
  return undefined;
}
