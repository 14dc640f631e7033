import { gunzipSync, gzipSync } from 'node:zlib';

/**
 * How a job's payload sits in its jsonb column. PostgreSQL's jsonb refuses the NUL character
 * (\u0000) in strings, and sampled model text can contain one; trajectory groups are also
 * large and repetitive. So the payload is stored as gzipped JSON in base64, inside a small
 * jsonb envelope that says so.
 */
export interface StoredPayload {
  encoding: 'json+gzip+base64';
  data: string;
}

export function encodePayload(value: unknown): StoredPayload {
  return { encoding: 'json+gzip+base64', data: gzipSync(Buffer.from(JSON.stringify(value), 'utf8')).toString('base64') };
}

export function decodePayload(stored: unknown): unknown {
  const envelope = stored as Partial<StoredPayload> | null;
  if (envelope?.encoding !== 'json+gzip+base64' || typeof envelope.data !== 'string') return stored;
  return JSON.parse(gunzipSync(Buffer.from(envelope.data, 'base64')).toString('utf8'));
}
