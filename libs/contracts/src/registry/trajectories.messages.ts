import type { BlobRef } from './blob-ref';
import type { SortOrder } from './checkpoints.messages';
import type { CallerScope } from './models.messages';

/**
 * One trajectory a model was sent, kept by the registry: by POST .../log, or in the groups of
 * an RL training job. `trajectory` is the object as the client sent it (messages_and_choices,
 * tools, reward, metrics, metadata, logs, additional_histories, ...).
 */
export interface TrajectoryRecord {
  id: string;
  object: 'trajectory';
  model_id: string;
  /** The model's newest step when it was sent: the policy that produced it. */
  step: number;
  split: string;
  /** The RL training job that trained on it; null for POST .../log. */
  job_id: string | null;
  /** The call that sent it (a log or a training job): with group_index it names its group. */
  batch_id: string;
  group_index: number;
  /** Its position in the group. */
  index: number;
  reward: number;
  /** Size of its JSON, what the retention limit in bytes counts. */
  bytes: number;
  trajectory: Record<string, unknown>;
  /** The group's own keys other than its trajectories (metadata, metrics, exceptions, logs). */
  group: Record<string, unknown>;
  /** ISO 8601. */
  created_at: string;
}

/**
 * An RL training job's trajectory groups as stored: one content-addressed object in the
 * artifact store (the JSON array as the client sent it), which the job's payload, the job's
 * kept trajectories and the worker's read all name by its digest.
 */
export interface StoredTrajectoryGroups {
  sha256: string;
  bytes: number;
}

/**
 * Registry-internal, before the job is stored: the groups (parked as a blob by the gateway and
 * validated by the orchestrator) become one object in the artifact store, held for the job
 * until it has ended. Repeating it stores nothing twice.
 */
export interface StoreJobTrajectoriesRequest extends CallerScope {
  model_id: string;
  /** The job's id, chosen before it is stored: what the object is held for. */
  job_id: string;
  /** The JSON array of trajectory groups, as the client sent it. */
  trajectory_groups: BlobRef;
}

/**
 * Registry-internal, once the job is stored: its groups (the object stored for it) kept as
 * trajectories of split "train"; each row names the object, none copies it.
 */
export interface RecordTrajectoriesRequest extends CallerScope {
  model_id: string;
  job_id: string;
  split: string;
  /** ISO 8601, when the job was created: they are kept at the model's newest step then, the policy that produced them. */
  as_of: string;
}

export interface RecordTrajectoriesReply {
  step: number;
  stored: number;
}

/** GET /v1/preview/models/{id}/trajectories?after&limit&order&step&split&job_id&min_reward&max_reward */
export interface ListTrajectoriesRequest extends CallerScope {
  model_id: string;
  /** Id of the last trajectory already seen. */
  after?: string;
  limit: number;
  /** By when they were stored; `desc` gives the newest first. */
  order: SortOrder;
  step?: number;
  split?: string;
  job_id?: string;
  min_reward?: number;
  max_reward?: number;
}
