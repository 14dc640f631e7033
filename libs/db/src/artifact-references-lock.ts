import type { Prisma } from './generated/prisma/client';

/**
 * The artifact store's objects are shared (content-addressed) and deleted by the sweep once no
 * row names them, so a row must never come to name an object the sweep is deleting. Every
 * transaction that writes such a row takes this PostgreSQL advisory lock shared and checks,
 * under it, that the objects are there; the sweep takes it exclusively while it decides what
 * is unreferenced and deletes it. Replicas of the registry share it through the database.
 */
const ARTIFACT_REFERENCES_LOCK = 7_490_318_224_001;

export async function lockReferencesShared(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock_shared(${ARTIFACT_REFERENCES_LOCK}::bigint)`;
}

export async function lockReferencesExclusive(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(${ARTIFACT_REFERENCES_LOCK}::bigint)`;
}

/** Checks, under the shared lock, that what a row will name is still stored (it throws if not). */
export type StillStored = () => Promise<void>;
