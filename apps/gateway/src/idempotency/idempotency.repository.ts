import { Injectable } from '@nestjs/common';
import { PrismaService } from '@trainyard/db';

/** responseStatus of a request that has claimed its key and not finished yet. */
export const IN_PROGRESS = 0;

export interface IdempotencyRecord {
  id: string;
  requestHash: string;
  responseStatus: number;
  responseBody: unknown;
  createdAt: Date;
}

export interface RequestIdentity {
  entityId: string;
  key: string;
  method: string;
  path: string;
  requestHash: string;
}

@Injectable()
export class IdempotencyRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Claims the key for this request; when someone already has, returns their record instead. */
  async claim(request: RequestIdentity): Promise<{ claimed: IdempotencyRecord } | { existing: IdempotencyRecord }> {
    const claimed = await this.prisma.$queryRaw<IdempotencyRecord[]>`
      INSERT INTO idempotency_keys (id, entity_id, key, method, path, request_hash, response_status, response_body)
      VALUES (gen_random_uuid(), ${request.entityId}::uuid, ${request.key}, ${request.method}, ${request.path},
              ${request.requestHash}, ${IN_PROGRESS}, 'null'::jsonb)
      ON CONFLICT (entity_id, key) DO NOTHING
      RETURNING id, request_hash AS "requestHash", response_status AS "responseStatus", response_body AS "responseBody", created_at AS "createdAt"`;
    if (claimed[0]) return { claimed: claimed[0] };
    const existing = await this.prisma.idempotencyKey.findUnique({
      where: { entityId_key: { entityId: request.entityId, key: request.key } },
    });
    // Gone between the two statements (released by a failed first attempt): try once more.
    return existing ? { existing } : this.claim(request);
  }

  async complete(id: string, status: number, body: unknown): Promise<void> {
    await this.prisma.idempotencyKey.update({
      where: { id },
      data: { responseStatus: status, responseBody: (body ?? null) as object },
    });
  }

  async release(id: string): Promise<void> {
    await this.prisma.idempotencyKey.deleteMany({ where: { id } });
  }

  /** Forgets an expired record so that its key can be claimed afresh. */
  async forgetIfOlderThan(id: string, cutoff: Date): Promise<boolean> {
    return (await this.prisma.idempotencyKey.deleteMany({ where: { id, createdAt: { lt: cutoff } } })).count > 0;
  }
}
