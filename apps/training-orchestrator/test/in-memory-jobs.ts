import { randomUUID } from 'node:crypto';
import type { SftJobPayload, TrainingEventType, TrainingJobStatus } from '@trainyard/contracts';
import type { BlobStore, MessageBus } from '@trainyard/messaging';
import type { JobQueue } from '../src/jobs/job-queue';
import type { JobRow, NewJob, TrainingJobRepository } from '../src/jobs/training-job.repository';

const TERMINAL: TrainingJobStatus[] = ['succeeded', 'failed', 'cancelled'];

/** An SFT job's payload of no conversations, with `fields`. */
export function sftPayload(fields: Partial<SftJobPayload> = {}): SftJobPayload {
  return {
    version: 2,
    type: 'sft',
    model_name: 'wandb-artifact:///acme/p/m',
    entity_name: 'acme',
    conversations: [],
    settings: { batchSize: 'auto', learningRate: 5e-5, assistantTurns: 'all' },
    ...fields,
  };
}

/**
 * TrainingJobRepository in memory, for unit tests of the services above it: each state change
 * takes the condition its SQL has (the repository's integration spec holds the real ones to
 * them), so a service asking for a transition the database would refuse is refused here too.
 */
export class InMemoryJobs {
  readonly rows = new Map<string, JobRow & { messageSeq: number | null }>();
  readonly events: { jobId: string; type: TrainingEventType; data: Record<string, unknown>; dedupeKey: string }[] = [];

  add(fields: Partial<JobRow> = {}): JobRow {
    const row: JobRow & { messageSeq: number | null } = {
      id: randomUUID(),
      entityId: 'e-1',
      modelId: 'm-1',
      type: 'sft',
      status: 'queued',
      payload: sftPayload({ model_name: 'acme/project/agent' }),
      experimentalConfig: null,
      ignoredConfigKeys: [],
      noStepsReason: null,
      errorMessage: null,
      checkpointStep: null,
      cancelRequested: false,
      createdAt: new Date('2026-01-01T00:00:00Z'),
      trainingStart: null,
      trainingEnd: null,
      attempts: 0,
      fineTuning: null,
      trainedTokens: null,
      messageSeq: null,
      ...fields,
    };
    this.rows.set(row.id, row);
    return row;
  }

  status(id: string): TrainingJobStatus | undefined {
    return this.rows.get(id)?.status;
  }

  eventTypes(id: string): string[] {
    return this.events.filter((e) => e.jobId === id).map((e) => e.type);
  }

  readonly repository = {
    create: async (job: NewJob) =>
      this.summary(this.add({ ...job, id: job.id ?? randomUUID(), experimentalConfig: job.experimentalConfig, ignoredConfigKeys: job.ignoredConfigKeys ?? [], fineTuning: job.fineTuning ?? null })),
    find: async (id: string) => {
      const row = this.rows.get(id);
      return row ? { ...row } : null;
    },
    unfinishedAmong: async (ids: string[]) => ids.filter((id) => ['queued', 'running'].includes(this.rows.get(id)?.status ?? '')),
    findSummary: async (id: string) => {
      const row = this.rows.get(id);
      return row ? this.summary(row) : null;
    },
    claim: async (id: string, messageSeq: number) => {
      const row = this.rows.get(id);
      if (!row || row.cancelRequested) return false;
      if (!(row.status === 'queued' || (row.status === 'running' && row.messageSeq === messageSeq))) return false;
      Object.assign(row, { status: 'running', trainingStart: row.trainingStart ?? new Date(), attempts: row.attempts + 1, messageSeq });
      return true;
    },
    finish: async (
      id: string,
      status: TrainingJobStatus,
      fields: { errorMessage?: string; checkpointStep?: number },
      finalEvent: { type: TrainingEventType; data: Record<string, unknown> },
      onlyFrom?: TrainingJobStatus,
    ) => {
      const row = this.rows.get(id);
      if (!row || (onlyFrom ? row.status !== onlyFrom : TERMINAL.includes(row.status))) return false;
      Object.assign(row, { status, trainingEnd: new Date(), errorMessage: fields.errorMessage ?? null, checkpointStep: fields.checkpointStep ?? null });
      if (!this.events.some((e) => e.jobId === id && e.dedupeKey === 'final')) this.events.push({ jobId: id, ...finalEvent, dedupeKey: 'final' });
      if (status === 'succeeded') await this.repository.recordTrainedTokens(id);
      return true;
    },
    setNoStepsReason: async (id: string, reason: string | null) => {
      const row = this.rows.get(id);
      if (row && !TERMINAL.includes(row.status)) row.noStepsReason = reason;
    },
    requestCancel: async (id: string) => {
      const row = this.rows.get(id);
      if (row && !TERMINAL.includes(row.status)) row.cancelRequested = true;
    },
    appendEvent: async (jobId: string, type: TrainingEventType, data: Record<string, unknown>, dedupeKey: string) => {
      if (this.events.some((e) => e.jobId === jobId && e.dedupeKey === dedupeKey)) return false;
      this.events.push({ jobId, type, data, dedupeKey });
      return true;
    },
    lastEvent: async (jobId: string, type: TrainingEventType) => {
      const index = this.events.map((e) => e.jobId === jobId && e.type === type).lastIndexOf(true);
      if (index < 0) return null;
      const { data, dedupeKey } = this.events[index];
      return { id: `event-${index}`, seq: BigInt(index), jobId, type, data, dedupeKey, createdAt: new Date('2026-01-01T00:00:00Z') };
    },
    /** Newest first, as the SQL orders them; the filters beyond the model are the repository spec's to check. */
    listForEntity: async (entityId: string, options: { modelId?: string; limit: number }) =>
      [...this.rows.values()]
        .filter((r) => r.entityId === entityId && (!options.modelId || r.modelId === options.modelId))
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id.localeCompare(a.id))
        .slice(0, options.limit + 1)
        .map((r) => this.summary(r)),
    progress: async (jobIds: string[]) => {
      const progress = new Map<string, { steps_done: number; num_steps: number }>();
      for (const id of jobIds) {
        const started = this.events.find((e) => e.jobId === id && e.type === 'training_started');
        if (!started) continue;
        const steps = this.events.filter((e) => e.jobId === id && e.type === 'gradient_step').map((e) => Number(e.dedupeKey.slice('step:'.length)));
        progress.set(id, { steps_done: Math.max(0, ...steps), num_steps: started.data['num_sequences'] as number });
      }
      return progress;
    },
    recordTrainedTokens: async (id: string) => {
      const row = this.rows.get(id);
      if (row?.status !== 'succeeded') return;
      row.trainedTokens = this.events
        .filter((e) => e.jobId === id && e.type === 'gradient_step' && typeof e.data['num_tokens'] === 'number')
        .reduce((sum, e) => sum + (e.data['num_tokens'] as number), 0);
    },
  } as unknown as TrainingJobRepository;

  private summary(row: JobRow): Omit<JobRow, 'payload'> {
    const { payload: _payload, ...summary } = row;
    return { ...summary };
  }
}

/** The job queue's calls, by model; `fails` makes advance reject as when the bus is down. */
export class FakeJobQueue {
  readonly advanced: string[] = [];
  fails = false;

  readonly queue = {
    advance: async (modelId: string) => {
      this.advanced.push(modelId);
      if (this.fails) throw new Error('training queue unavailable');
    },
  } as unknown as JobQueue;
}

/** What the services publish, by subject name. */
export class FakeBus {
  readonly published: { subject: string; payload: unknown; suffix?: string }[] = [];

  readonly bus = {
    publish: (subject: { name: string }, payload: unknown, options: { suffix?: string } = {}) => this.published.push({ subject: subject.name, payload, suffix: options.suffix }),
  } as unknown as MessageBus;
}

/** Blobs kept in memory under made-up ids. */
export class FakeBlobs {
  readonly stored = new Map<string, unknown>();

  readonly blobs = {
    putJson: async (value: unknown) => {
      const id = `blob-${this.stored.size + 1}`;
      this.stored.set(id, value);
      return id;
    },
    takeJson: async (id: string) => this.take(id),
    readJson: async (id: string) => this.stored.get(id),
    discard: async (id: string) => void this.take(id),
  } as unknown as BlobStore;

  private take(id: string): unknown {
    const value = this.stored.get(id);
    this.stored.delete(id);
    return value;
  }
}
