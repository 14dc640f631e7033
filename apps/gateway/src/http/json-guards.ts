import { ServiceError } from '@trainyard/contracts';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Deepest nesting of arrays and objects a JSON body may have. The deepest real requests
 * (trajectory groups with tool calls, JSON schemas in response_format) stay far below it;
 * far deeper input would only exhaust the stack of whatever walks it (class-transformer
 * overflows near 10 000 levels), turning hostile input into a 500.
 */
export const MAX_JSON_DEPTH = 256;

/** A body nested deeper than MAX_JSON_DEPTH, as body-parser's verify hook reports it. */
export class JsonTooDeepError extends Error {
  readonly type = 'entity.too.deep';
  readonly status = 422;
  readonly expose = true;

  constructor(readonly limit: number) {
    super(`JSON is nested deeper than ${limit} levels`);
  }
}

/** How deep `text` nests, counting brackets outside strings; stops counting once past `limit`. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** body-parser `verify` hook: refuses a body nested too deep before it is parsed. */
export function refuseDeepJson(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  let text: string;
  try {
    text = /^utf-?8$/i.test(encoding) ? body.toString('utf8') : new TextDecoder(encoding).decode(body);
  } catch {
    return; // an encoding the decoder does not know: body-parser refuses it itself
  }
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) throw new JsonTooDeepError(MAX_JSON_DEPTH);
}

/**
 * Keys that class-transformer (the ValidationPipe's copy of every body) silently drops, as its
 * defence against prototype pollution. Dropped silently, they would be neither validated nor
 * refused: an unknown experimental_config key would vanish instead of being named (api.md).
 */
const RESERVED_KEYS = ['__proto__', 'constructor'];

/**
 * Express middleware after the JSON parser: refuses a body with a reserved key anywhere,
 * naming where it is. No request of this API has a use for either key.
 */
export function refuseReservedKeys(req: Request, _res: Response, next: NextFunction): void {
  const path = reservedKeyPath(req.body);
  if (path) {
    next(ServiceError.validation([{ loc: ['body', ...path], msg: `"${path.at(-1)}" is not allowed as a key`, type: 'forbidden_key' }]));
    return;
  }
  next();
}

/** Where the first own reserved key is, walking without recursion (nesting is bounded, but need not be trusted). */
export function reservedKeyPath(value: unknown): (string | number)[] | undefined {
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop() as { value: unknown; path: (string | number)[] };
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      current.forEach((item, i) => pending.push({ value: item, path: [...path, i] }));
      continue;
    }
    const reserved = RESERVED_KEYS.find((key) => Object.prototype.hasOwnProperty.call(current, key));
    if (reserved) return [...path, reserved];
    for (const [key, item] of Object.entries(current)) pending.push({ value: item, path: [...path, key] });
  }
  return undefined;
}
