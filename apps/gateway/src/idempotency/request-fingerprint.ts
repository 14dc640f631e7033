import { createHash } from 'node:crypto';
import type { Request } from 'express';

/**
 * What makes two requests "the same" for an Idempotency-Key: method, path and query, the
 * body, and an uploaded file's bytes. Body keys are sorted so that field order does not matter.
 */
export function requestFingerprint(req: Request & { file?: { buffer: Buffer; originalname: string } }): string {
  const hash = createHash('sha256');
  hash.update(`${req.method} ${req.originalUrl}\n`);
  hash.update(canonicalJson(req.body ?? null));
  if (req.file) hash.update(`\n${req.file.originalname}\n`).update(req.file.buffer);
  return hash.digest('hex');
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}
