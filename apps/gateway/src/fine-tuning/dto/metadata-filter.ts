import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { FineTuningMetadataFilter, ServiceError } from '@trainyard/contracts';
import type { Request } from 'express';
import { isStorableText } from './fine-tuning.validators';

const PAIR = /^metadata\[(.+)\]$/;

/**
 * OpenAI's metadata filter of a list: `metadata[k]=v` (every pair must match) or
 * `metadata=null` (only jobs without metadata); undefined when the query has neither. Read from
 * the raw query, where `metadata[k]` stays one key (or, under an extended query parser, an object).
 */
export function metadataFilter(query: Record<string, unknown>): FineTuningMetadataFilter | undefined {
  const pairs: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    const name = PAIR.exec(key)?.[1];
    if (name !== undefined) pairs[name] = stringValue(key, value);
  }
  const nested = query['metadata'];
  // `metadata=null` as written, or `metadata=` as the SDKs' query encoder writes a null.
  if ((nested === 'null' || nested === '') && Object.keys(pairs).length === 0) return null;
  if (typeof nested === 'object' && nested !== null && !Array.isArray(nested)) {
    for (const [name, value] of Object.entries(nested)) pairs[name] = stringValue(`metadata[${name}]`, value);
  } else if (nested !== undefined) {
    throw ServiceError.validation([{ loc: ['query', 'metadata'], msg: 'metadata must be null or given as metadata[key]=value pairs', type: 'value_error' }]);
  }
  return Object.keys(pairs).length > 0 ? pairs : undefined;
}

function stringValue(key: string, value: unknown): string {
  if (typeof value === 'string' && isStorableText(key) && isStorableText(value)) return value;
  throw ServiceError.validation([{ loc: ['query', 'metadata'], msg: `${key} must be given once, as text without NUL characters or unpaired surrogates`, type: 'value_error' }]);
}

/** The request's metadata filter (see metadataFilter). */
export const MetadataFilter = createParamDecorator((_: unknown, ctx: ExecutionContext): FineTuningMetadataFilter | undefined =>
  metadataFilter(ctx.switchToHttp().getRequest<Request>().query as Record<string, unknown>),
);
