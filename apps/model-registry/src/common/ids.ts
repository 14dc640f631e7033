const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are uuids; anything else names nothing (and must not reach a uuid column). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Postgres unique violation, as Prisma reports it. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'P2002';
}
