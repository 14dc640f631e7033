export { isUuid } from '@trainyard/contracts';

/** Postgres unique violation, as Prisma reports it. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'P2002';
}
