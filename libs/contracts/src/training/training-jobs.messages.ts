import type { BlobRef } from '../registry/blob-ref';
import type { StoredTrajectoryGroups } from '../registry/trajectories.messages';
import type { SortOrder } from '../registry/checkpoints.messages';
import type { CallerScope } from '../registry/models.messages';
import type { FineTuningDetails, FineTuningMetadataFilter } from './fine-tuning.messages';

export type TrainingJobType = 'rl' | 'sft';
export type TrainingJobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const TERMINAL_JOB_STATUSES: readonly TrainingJobStatus[] = ['succeeded', 'failed', 'cancelled'];

/** GET /v1/preview/training-jobs/{id} (api.md, our decision). */
export interface TrainingJobRecord {
  id: string;
  object: 'training_job';
  type: TrainingJobType;
  model_id: string;
  status: TrainingJobStatus;
  /** ISO 8601. */
  created_at: string;
  /** When a worker first started it; a re-run keeps the first start. */
  training_start: string | null;
  training_end: string | null;
  error_message: string | null;
  checkpoint_step: number | null;
  /**
   * Keys of the request's config and experimental_config this service does not know:
   * accepted, not applied, named with their object ("config.x", "experimental_config.y").
   */
  ignored_config_keys: string[];
  /** Times a worker started it: 0 while queued, more than 1 when it was re-run after a worker stopped (our addition). */
  attempts: number;
  /**
   * Why the job made no gradient step (every group's rewards were equal, or nothing was
   * trainable); null when it made some or has not been planned yet. Also in training_started.
   */
  no_gradient_steps_reason: string | null;
  /** Tokens its gradient steps processed, once it succeeded (our addition; OpenAI's trained_tokens). */
  trained_tokens: number | null;
  /** Set when it was created through /v1/fine_tuning/jobs (our addition). */
  fine_tuning: FineTuningDetails | null;
  /** While it runs: the gradient steps reported so far and those planned (our addition); null otherwise. */
  progress: JobStepProgress | null;
}

export interface JobStepProgress {
  steps_done: number;
  num_steps: number;
}

export type TrainingEventType = 'training_started' | 'gradient_step' | 'training_ended' | 'training_failed';

export const TERMINAL_EVENT_TYPES: readonly TrainingEventType[] = ['training_ended', 'training_failed'];

export interface TrainingEventRecord {
  id: string;
  type: TrainingEventType;
  data: Record<string, unknown>;
  /** ISO 8601. */
  created_at: string;
  /** gradient_step only: the step's number in the job, from 1 (our addition). */
  step?: number;
}

/** POST /v1/preview/training-jobs: the groups travel as a blob (they run to megabytes). */
export interface CreateRlJobRequest extends CallerScope {
  model_id: string;
  trajectory_groups: BlobRef;
  experimental_config: Record<string, unknown> | null;
}

/** POST /v1/preview/sft-training-jobs. */
export interface CreateSftJobRequest extends CallerScope {
  model_id: string;
  /** An uploaded file id (/v1/files), an http(s) URL or a `wandb-artifact:///` reference. */
  training_data_url: string;
  config: Record<string, unknown> | null;
  experimental_config: Record<string, unknown> | null;
}

export interface CreateJobReply {
  id: string;
}

export interface JobRequest extends CallerScope {
  job_id: string;
  /** Only a job created through /v1/fine_tuning/jobs; any other is not found. */
  fine_tuning?: boolean;
}

/** GET /v1/preview/training-jobs (our addition): the caller's jobs, newest first. */
export interface ListTrainingJobsRequest extends CallerScope {
  /** Only this model's jobs. */
  model_id?: string;
  /** Only jobs created through /v1/fine_tuning/jobs. */
  fine_tuning?: boolean;
  /** Only fine-tuning jobs with this metadata (implies fine_tuning). */
  metadata?: FineTuningMetadataFilter;
  /** Id of the last job already seen. */
  after?: string;
  limit: number;
}

export interface ListJobEventsRequest extends CallerScope {
  job_id: string;
  /** Only a job created through /v1/fine_tuning/jobs; any other is not found. */
  fine_tuning?: boolean;
  /** Id of the last event already seen. */
  after?: string;
  limit: number;
  /** asc (default): oldest first, as ART polls them; desc: newest first, as OpenAI lists them. */
  order?: SortOrder;
}

/** Published (no reply) on `${Subjects.training.eventsAppended.name}.${job_id}` after each event is stored: a wake-up for SSE relays. */
export interface JobEventsAppended {
  job_id: string;
}

// ---------------------------------------------------------------- work queue and worker

/**
 * What the orchestrator stores with a job and hands to the worker that claims it: the
 * request validated and resolved once, at creation (libs/art), into the training inputs. An
 * SFT job's conversations and settings are the engine's own shapes (SftConversation,
 * SftTrainingConfig), declared here structurally, and an RL job's settings hold the engine's
 * (RLTrainingConfig) and the planning's: the worker hands them to the engine's trainer, so the
 * compiler checks both ends against this one declaration. An RL job's trajectory groups are
 * planned by the worker into the trainer's token sequences and advantages (its rl-plan.ts);
 * version 3 does not hold them: they are one object in the artifact store, named by digest.
 * A version 1 payload, stored with experimental_config or config as sent, is resolved by the
 * orchestrator when it is claimed.
 */
export type TrainingJobPayload = RlJobPayload | SftJobPayload;

interface JobPayloadBase {
  /** `wandb-artifact:///{entity}/{project}/{name}`. */
  model_name: string;
  entity_name: string;
}

/** An RL job: version 3 names its groups in the artifact store; version 2 (stored before) holds them. */
export type RlJobPayload = RlJobPayloadV3 | RlJobPayloadV2;

interface RlJobPayloadBase extends JobPayloadBase {
  type: 'rl';
  settings: TrainingRlSettings;
  /** The KL penalty's reference policy; null: the base model. */
  kl_reference: TrainingKlReference | null;
}

export interface RlJobPayloadV3 extends RlJobPayloadBase {
  version: 3;
  /**
   * The trajectory groups as the client sent them, validated at creation; the worker reads
   * them by digest and maps them for the trainer (libs/art's rlTrainingGroups).
   */
  trajectory_groups: StoredTrajectoryGroups;
}

export interface RlJobPayloadV2 extends RlJobPayloadBase {
  version: 2;
  groups: TrainingTrajectoryGroup[];
}

export interface SftJobPayload extends JobPayloadBase {
  version: 2;
  type: 'sft';
  conversations: TrainingConversation[];
  settings: TrainingSftSettings;
  /** Passes over the conversations (default 1). */
  epochs?: number;
  /** When set, each epoch takes the conversations in an order drawn from this seed; otherwise in file order. */
  shuffle_seed?: number;
  /** Held-out conversations whose loss is measured (valid_loss) at the end of each epoch, never trained on. */
  validation_conversations?: TrainingConversation[];
}

/**
 * The checkpoint the KL penalty is measured against: a step of the job's own model, the
 * checkpoint `steps_back` steps before the one the job trains from (known only when it runs),
 * or a checkpoint named in full (`wandb-artifact:///{entity}/{project}/{name}:step{N}`, one
 * of the caller's, resolved through the registry with the job's scope).
 */
export type TrainingKlReference = { step: number } | { steps_back: number } | { model: string };

/** How an RL job trains: the policy loss, the advantages, the logprobs it trains against, the packing of steps. */
export interface TrainingRlSettings {
  learningRate: number;
  lossFn: 'cispo' | 'ppo';
  epsilon: number;
  epsilonHigh: number;
  importanceSamplingLevel: 'token' | 'sequence' | 'average' | 'geometric_average';
  maxNegativeAdvantageImportanceSamplingWeight: number | null;
  maskProbRatio: boolean;
  kimiK2Tau: number | null;
  klPenaltyCoef: number;
  klPenaltySource: 'current_learner' | 'sample';
  truncatedImportanceSampling: number | null;
  scaleRewards: boolean;
  advantageBalance: number;
  precalculateLogprobs: boolean;
  allowTrainingWithoutLogprobs: boolean;
  /** Token budget of one gradient step (rows x padded length). */
  packedSequenceLength: number;
  logprobCalculationChunkSize: number;
  numTrajectoriesLearningRateMultiplierPower: number;
}

/** How an SFT job trains: conversations per step, the learning rate (one per step when a list), which assistant turns carry loss. */
export interface TrainingSftSettings {
  batchSize: number | 'auto';
  learningRate: number | number[];
  assistantTurns: 'all' | 'last';
}

export interface TrainingToolCall {
  id?: string;
  type?: 'function';
  function: { name: string; arguments: string | Record<string, unknown> };
}

export interface TrainingChatMessage {
  role: string;
  content: string | null;
  tool_calls?: TrainingToolCall[];
  tool_call_id?: string;
  name?: string;
  /** SFT, an assistant message only: 0 keeps it as context without loss (OpenAI's chat JSONL `weight`); absent or 1 trains it. */
  weight?: 0 | 1;
}

/** A sampled assistant turn: its own token ids and sampling logprobs are what RL trains on. */
export interface TrainingChoice {
  choice: {
    tokenIds: number[];
    logprobs: (number | null)[] | null;
    message: TrainingChatMessage;
  };
}

export interface TrainingHistory {
  messagesAndChoices: (TrainingChatMessage | TrainingChoice)[];
  /** OpenAI-style tool definitions. */
  tools?: object[];
}

export interface TrainingTrajectory extends TrainingHistory {
  reward: number;
  additionalHistories?: TrainingHistory[];
}

export interface TrainingTrajectoryGroup {
  trajectories: TrainingTrajectory[];
}

export interface TrainingConversation {
  messages: TrainingChatMessage[];
  tools?: object[];
}

/** The work-queue message: only the id. The job itself is claimed from the orchestrator. */
export interface TrainingWorkItem {
  job_id: string;
}

export interface ClaimJobRequest {
  job_id: string;
  /** Worker instance, for logs. */
  worker: string;
  /**
   * Stream sequence of the queue message being handled. A running job claimed through the same
   * message is restarted (the message came back: its holder stopped); through another, it is
   * a duplicate and skipped. The sequence, not JetStream's delivery count, tells them apart: a
   * nats-server 2.9 that fails to deliver a redelivery sends it again counted as a first one.
   */
  message_seq: number;
  /** JetStream's delivery count of the message, for logs. */
  delivery: number;
}

/** What a worker needs to train a job. */
export interface ClaimedJob {
  job_id: string;
  type: TrainingJobType;
  model_id: string;
  entity_id: string;
  entity_name: string;
  /** `wandb-artifact:///{entity}/{project}/{name}`: resolves to the base model and the newest adapter. */
  model_name: string;
  /** What the job trains on and with, parked as a blob (an RL job's groups are not in it: it names them). */
  payload: BlobRef<TrainingJobPayload>;
}

export type ClaimJobReply =
  | { action: 'run'; job: ClaimedJob }
  /** Finished, cancelled, or already held by a live worker: acknowledge the message and drop it. */
  | { action: 'skip'; reason: string };

export type JobProgress =
  | { job_id: string; kind: 'started'; num_sequences: number; no_gradient_steps_reason?: string | null }
  | { job_id: string; kind: 'step'; step: number; metrics: Record<string, number> };

export interface JobProgressReply {
  cancel_requested: boolean;
}

export type CompleteJobRequest =
  | { job_id: string; outcome: 'succeeded'; checkpoint_step: number }
  | { job_id: string; outcome: 'failed'; error_message: string }
  | { job_id: string; outcome: 'cancelled' };

/** Registry to orchestrator, when it sweeps the artifact store: which of these jobs will not run again. */
export interface EndedJobsRequest {
  job_ids: string[];
}

export interface EndedJobsReply {
  /** Those of the request's ids that have ended (succeeded, failed or cancelled) or name no job. */
  job_ids: string[];
}

/** Every training worker listens; the one running the job aborts it between steps. */
export interface CancelTrainingJob {
  job_id: string;
}
