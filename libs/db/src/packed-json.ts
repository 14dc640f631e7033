import { gunzipSync, gzipSync } from 'node:zlib';

/**
 * How client-supplied JSON (job payloads, logged trajectory groups) sits in a jsonb column.
 * PostgreSQL's jsonb refuses the NUL character (\u0000) in strings, and sampled model text
 * can contain one; trajectory groups are also large and repetitive. So the value is stored
 * as gzipped JSON in base64, inside a small jsonb envelope that says so.
 */
export interface PackedJson {
  encoding: 'json+gzip+base64';
  data: string;
}

export function packJson(value: unknown): PackedJson {
  return { encoding: 'json+gzip+base64', data: gzipSync(Buffer.from(JSON.stringify(value), 'utf8')).toString('base64') };
}

export function unpackJson(stored: unknown): unknown {
  const envelope = stored as Partial<PackedJson> | null;
  if (envelope?.encoding !== 'json+gzip+base64' || typeof envelope.data !== 'string') return stored;
  return JSON.parse(gunzipSync(Buffer.from(envelope.data, 'base64')).toString('utf8'));
}
