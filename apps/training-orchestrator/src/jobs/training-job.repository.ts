import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService, unpackJson, packJson } from '@trainyard/db';
import type {
  FineTuningDetails,
  FineTuningMetadataFilter,
  JobStepProgress,
  SortOrder,
  TrainingEventType,
  TrainingJobPayload,
  TrainingJobStatus,
  TrainingJobType,
} from '@trainyard/contracts';
import type { StoredJobPayload } from './job-payload';

export interface JobRow {
  id: string;
  entityId: string;
  modelId: string;
  type: TrainingJobType;
  status: TrainingJobStatus;
  payload: StoredJobPayload;
  experimentalConfig: unknown;
  ignoredConfigKeys: string[] | null;
  noStepsReason: string | null;
  errorMessage: string | null;
  checkpointStep: number | null;
  cancelRequested: boolean;
  createdAt: Date;
  trainingStart: Date | null;
  trainingEnd: Date | null;
  attempts: number;
  /** A FineTuningDetails for a job made through /v1/fine_tuning/jobs, else null. */
  fineTuning: unknown;
  trainedTokens: number | null;
}

export interface EventRow {
  id: string;
  seq: bigint;
  jobId: string;
  type: string;
  data: unknown;
  dedupeKey: string | null;
  createdAt: Date;
}

export interface NewJob {
  /** Chosen by the caller when something made before the job (a fine-tuning job's model) is named after it. */
  id?: string;
  entityId: string;
  modelId: string;
  type: TrainingJobType;
  payload: TrainingJobPayload;
  experimentalConfig: unknown;
  ignoredConfigKeys?: string[];
  fineTuning?: FineTuningDetails;
}

/** Which of an entity's jobs a list holds. */
export interface JobFilter {
  modelId?: string;
  /** Only jobs made through /v1/fine_tuning/jobs. */
  fineTuning?: boolean;
  /** Only fine-tuning jobs with every one of these metadata pairs; null: only those without metadata. */
  metadata?: FineTuningMetadataFilter;
}

const TERMINAL: TrainingJobStatus[] = ['succeeded', 'failed', 'cancelled'];

/** Training jobs and their events. Every state change is a conditional update, so racing writers cannot both win. */
@Injectable()
export class TrainingJobRepository {
  constructor(private readonly prisma: PrismaService) {}

  create(job: NewJob): Promise<Omit<JobRow, 'payload'>> {
    return this.prisma.trainingJob.create({
      data: {
        ...(job.id ? { id: job.id } : {}),
        entityId: job.entityId,
        modelId: job.modelId,
        type: job.type,
        payload: packJson(job.payload) as unknown as Prisma.InputJsonValue,
        experimentalConfig: (job.experimentalConfig ?? Prisma.JsonNull) as Prisma.InputJsonValue,
        ignoredConfigKeys: job.ignoredConfigKeys ?? [],
        fineTuning: job.fineTuning ? (job.fineTuning as unknown as Prisma.InputJsonValue) : Prisma.DbNull,
      },
    });
  }

  /** Those of `ids` that are queued or running: a worker may still read their payload. */
  async unfinishedAmong(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.prisma.trainingJob.findMany({ where: { id: { in: ids }, status: { in: ['queued', 'running'] } }, select: { id: true } });
    return rows.map((row) => row.id);
  }

  async find(id: string): Promise<JobRow | null> {
    const row = await this.prisma.trainingJob.findUnique({ where: { id } });
    // Only create() writes the column: a TrainingJobPayload, or a legacy one written before it.
    return row && { ...row, payload: unpackJson(row.payload) as StoredJobPayload };
  }

  /** The job without its (large) payload. */
  findSummary(id: string): Promise<Omit<JobRow, 'payload'> | null> {
    return this.prisma.trainingJob.findUnique({ where: { id }, omit: { payload: true } });
  }

  /**
   * An entity's jobs, newest first (ties broken by id, so the order is total), strictly
   * after `after` in that order; one extra row tells whether more follow.
   */
  listForEntity(
    entityId: string,
    options: JobFilter & { limit: number; after?: { createdAt: Date; id: string } },
  ): Promise<Omit<JobRow, 'payload'>[]> {
    const { modelId, limit, after } = options;
    return this.prisma.trainingJob.findMany({
      where: {
        entityId,
        ...(modelId ? { modelId } : {}),
        AND: fineTuningConditions(options),
        ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
      omit: { payload: true },
    });
  }

  /** The oldest unfinished job of a model: the only one of that model that may be queued for a worker. */
  head(modelId: string): Promise<Omit<JobRow, 'payload'> | null> {
    return this.prisma.trainingJob.findFirst({
      where: { modelId, status: { in: ['queued', 'running'] } },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      omit: { payload: true },
    });
  }

  /** The head of every model that has unfinished jobs: the jobs that must each have a message in the training queue. */
  heads(): Promise<Pick<JobRow, 'id' | 'modelId' | 'status' | 'attempts'>[]> {
    return this.prisma.$queryRaw`
      SELECT DISTINCT ON (model_id) id, model_id AS "modelId", status, attempts
      FROM training_jobs
      WHERE status IN ('queued', 'running')
      ORDER BY model_id, created_at, id`;
  }

  /**
   * running -> queued, for a job that no worker can finish (its message is gone); only while it
   * is still the run that was seen (`attempts`), so a job that ended or was claimed again meanwhile is left alone.
   */
  async requeue(id: string, attempts: number): Promise<boolean> {
    const { count } = await this.prisma.trainingJob.updateMany({ where: { id, status: 'running', attempts }, data: { status: 'queued' } });
    return count === 1;
  }

  /** Models with jobs still to run: their heads are (re)published at start. */
  async modelsWithQueuedJobs(): Promise<string[]> {
    const rows = await this.prisma.trainingJob.findMany({ where: { status: 'queued' }, distinct: ['modelId'], select: { modelId: true } });
    return rows.map((r) => r.modelId);
  }

  /**
   * queued -> running through queue message `messageSeq`; or running -> running again when that
   * same message comes back (its worker stopped). Counts the attempt; the first start is kept,
   * so training_start says when the job began.
   */
  async claim(id: string, messageSeq: number): Promise<boolean> {
    const count = await this.prisma.$executeRaw`
      UPDATE training_jobs
      SET status = 'running', training_start = COALESCE(training_start, now()), attempts = attempts + 1, message_seq = ${messageSeq}
      WHERE id = ${id}::uuid AND cancel_requested = false
        AND (status = 'queued' OR (status = 'running' AND message_seq = ${messageSeq}))`;
    return count === 1;
  }

  /** Moves an unfinished job to a final state; false if it already was final. */
  /**
   * Ends the job (unless it already ended, or is not in `onlyFrom`) and stores its final event
   * in the same transaction, so that whoever sees the job ended finds its final event too.
   */
  async finish(
    id: string,
    status: TrainingJobStatus,
    fields: { errorMessage?: string; checkpointStep?: number },
    finalEvent: { type: TrainingEventType; data: Record<string, unknown> },
    onlyFrom?: TrainingJobStatus,
  ): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const { count } = await tx.trainingJob.updateMany({
        where: { id, status: onlyFrom ?? { notIn: TERMINAL } },
        data: { status, trainingEnd: new Date(), errorMessage: withoutNul(fields.errorMessage) ?? null, checkpointStep: fields.checkpointStep ?? null },
      });
      if (count === 1) {
        await tx.$executeRaw`${insertEvent(id, finalEvent.type, finalEvent.data, FINAL_EVENT_KEY)}`;
        // In the same transaction: a job is never seen succeeded without its trained_tokens.
        if (status === 'succeeded') await this.recordTrainedTokens(id, tx);
      }
      return count === 1;
    });
  }

  /** What the worker found when it planned the job: why it will make no gradient step, if it will make none. */
  async setNoStepsReason(id: string, reason: string | null): Promise<void> {
    await this.prisma.trainingJob.updateMany({ where: { id, status: { notIn: TERMINAL } }, data: { noStepsReason: reason } });
  }

  async requestCancel(id: string): Promise<void> {
    await this.prisma.trainingJob.updateMany({ where: { id, status: { notIn: TERMINAL } }, data: { cancelRequested: true } });
  }

  /** Stores an event once per dedupe key: a redelivered report adds nothing. */
  async appendEvent(jobId: string, type: TrainingEventType, data: Record<string, unknown>, dedupeKey: string): Promise<boolean> {
    const rows = await this.prisma.$executeRaw`${insertEvent(jobId, type, data, dedupeKey)}`;
    return rows === 1;
  }

  findEvent(jobId: string, eventId: string): Promise<EventRow | null> {
    return this.prisma.jobEvent.findFirst({ where: { id: eventId, jobId } });
  }

  /** Oldest first (or newest first), strictly after `afterSeq` in that order; one extra row tells whether more follow. */
  events(jobId: string, limit: number, afterSeq?: bigint, order: SortOrder = 'asc'): Promise<EventRow[]> {
    return this.prisma.jobEvent.findMany({
      where: { jobId, ...(afterSeq === undefined ? {} : { seq: order === 'asc' ? { gt: afterSeq } : { lt: afterSeq } }) },
      orderBy: { seq: order },
      take: limit + 1,
    });
  }

  /** How far each job got: the last gradient step it reported and the steps its training_started planned. */
  async progress(jobIds: string[]): Promise<Map<string, JobStepProgress>> {
    if (jobIds.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<{ job_id: string; done: number | null; planned: number | null }[]>`
      SELECT job_id::text AS job_id,
        MAX(CASE WHEN type = 'gradient_step' AND dedupe_key ~ '^step:[0-9]{1,9}$' THEN substring(dedupe_key FROM 6)::integer END) AS done,
        MAX(CASE WHEN type = 'training_started' AND jsonb_typeof(data->'num_sequences') = 'number' THEN (data->>'num_sequences')::numeric::integer END) AS planned
      FROM job_events
      WHERE job_id = ANY(${jobIds}::uuid[]) AND type IN ('gradient_step', 'training_started')
      GROUP BY job_id`;
    return new Map(rows.filter((r) => r.planned !== null).map((r) => [r.job_id, { steps_done: r.done ?? 0, num_steps: r.planned as number }]));
  }

  /** The job's newest event of a type. */
  lastEvent(jobId: string, type: TrainingEventType): Promise<EventRow | null> {
    return this.prisma.jobEvent.findFirst({ where: { jobId, type }, orderBy: { seq: 'desc' } });
  }

  /** trained_tokens of a job that succeeded: the num_tokens of its gradient steps, summed (finish does it). Repeating it changes nothing. */
  async recordTrainedTokens(id: string, db: Prisma.TransactionClient = this.prisma): Promise<void> {
    await db.$executeRaw`
      UPDATE training_jobs
      SET trained_tokens = (
        SELECT COALESCE(SUM((data->>'num_tokens')::numeric), 0)::integer
        FROM job_events
        WHERE job_id = ${id}::uuid AND type = 'gradient_step' AND jsonb_typeof(data->'num_tokens') = 'number'
      )
      WHERE id = ${id}::uuid AND status = 'succeeded'`;
  }
}

/** The fine-tuning part of a job filter, as Prisma conditions on the fine_tuning column. */
function fineTuningConditions({ fineTuning, metadata }: JobFilter): Prisma.TrainingJobWhereInput[] {
  if (!fineTuning && metadata === undefined) return [];
  const conditions: Prisma.TrainingJobWhereInput[] = [{ fineTuning: { not: Prisma.DbNull } }];
  if (metadata === null) conditions.push({ fineTuning: { path: ['metadata'], equals: Prisma.JsonNull } });
  for (const [key, value] of Object.entries(metadata ?? {})) conditions.push({ fineTuning: { path: ['metadata', key], equals: value } });
  return conditions;
}

/** jsonb and text columns refuse NUL; an error message may quote sampled text that has one. */
function withoutNul<T extends string | undefined>(text: T): T {
  return (text === undefined ? text : text.split(String.fromCharCode(0)).join('').split('\\u0000').join('')) as T;
}

/** The dedupe key of a job's one final event (training_ended or training_failed). */
export const FINAL_EVENT_KEY = 'final';

/** Stores an event once per dedupe key. */
function insertEvent(jobId: string, type: TrainingEventType, data: Record<string, unknown>, dedupeKey: string): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO job_events (id, job_id, type, data, dedupe_key)
    VALUES (gen_random_uuid(), ${jobId}::uuid, ${type}, ${withoutNul(JSON.stringify(data))}::jsonb, ${dedupeKey})
    ON CONFLICT (job_id, dedupe_key) DO NOTHING`;
}
