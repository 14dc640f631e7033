import type { SampleTokensRequest, SampleTokensResult } from '../chat/token-sampling.messages';
import type { BlobRef } from '../registry/blob-ref';
import type { CallerScope } from '../registry/models.messages';

/**
 * The Tinker training primitives between the gateway (which speaks the SDK's protocol), the
 * training orchestrator (which owns sessions, training clients and futures, in PostgreSQL) and
 * the training workers (which hold each training client's adapter, gradients and optimizer
 * state in memory and run its calls in seq_id order). The SDK's own shapes live in libs/tinker.
 */

export type TinkerCallKind = 'forward_backward' | 'forward' | 'optim_step' | 'save_weights_for_sampler' | 'save_weights' | 'load_weights';
export type TinkerFutureKind = TinkerCallKind | 'create_model' | 'sample';

/** The SDK's LoraConfig, defaults filled in. */
export interface TinkerLoraConfig {
  rank: number;
  seed: number | null;
  train_attn: boolean;
  train_mlp: boolean;
  train_unembed: boolean;
}

/** A loss input as decoded from the SDK's protobuf Tensor: values row-major in `shape`. */
export interface TinkerTensor {
  dtype: string;
  shape: number[];
  values: number[];
}

export interface TinkerDatum {
  /** Input tokens (every encoded_text chunk, in order). */
  model_input: number[];
  loss_fn_inputs: Record<string, TinkerTensor>;
}

export interface TinkerAdamParams {
  learning_rate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weight_decay: number;
  /** 0: no clipping. */
  grad_clip_norm: number;
}

/** One call on a training client, validated by the gateway; what a worker executes. */
export type TinkerCall =
  | { kind: 'forward_backward' | 'forward'; loss_fn: string; loss_fn_config: Record<string, number>; data: TinkerDatum[] }
  | { kind: 'optim_step'; adam_params: TinkerAdamParams }
  | { kind: 'save_weights_for_sampler'; name: string }
  /** save_state: the adapter and Adam's state, kept under tinker://<client>/weights/<name>. */
  | { kind: 'save_weights'; name: string; overwrite: boolean }
  /** load_state / load_state_with_optimizer: a saved state of the caller's, onto this client. */
  | { kind: 'load_weights'; path: string; optimizer: boolean };

/** forward / forward_backward: per datum, the targets' log-probs; metrics keyed `name:reduction`. */
export interface TinkerForwardBackwardResult {
  loss_fn_outputs: { logprobs: number[] }[];
  metrics: Record<string, number>;
}

export interface TinkerOptimStepResult {
  metrics: Record<string, number>;
}

export interface TinkerSaveWeightsResult {
  /** `tinker://<training client id>/sampler_weights/<name>`. */
  path: string;
  /** The registry checkpoint the weights became, and the name chat completions serve it by. */
  checkpoint_step: number;
  model: string;
}

export interface TinkerCreateModelResult {
  model_id: string;
}

/** save_weights and load_weights: the state's `tinker://<client>/weights/<name>` path. */
export interface TinkerStatePathResult {
  path: string;
}

/** asample: what chat's token sampling returns. */
export type TinkerSampleResult = SampleTokensResult;

export type TinkerResult = TinkerForwardBackwardResult | TinkerOptimStepResult | TinkerSaveWeightsResult | TinkerCreateModelResult | TinkerStatePathResult | TinkerSampleResult;

// ---------------------------------------------------------------- gateway -> orchestrator

export interface CreateTinkerSessionRequest extends CallerScope {
  tags: string[];
  user_metadata: Record<string, unknown>;
  sdk_version: string | null;
}

export interface TinkerSessionReply {
  session_id: string;
}

export interface TinkerSessionRequest extends CallerScope {
  session_id: string;
}

export interface CreateTinkerModelRequest extends CallerScope {
  session_id: string;
  model_seq_id: number;
  base_model: string;
  lora_config: TinkerLoraConfig;
}

/** A call on a training client; a repeated (client, seq_id) answers the first future. */
export interface SubmitTinkerCallRequest extends CallerScope {
  model_id: string;
  seq_id: number;
  call: BlobRef<TinkerCall>;
}

export interface TinkerFutureReply {
  request_id: string;
  model_id?: string;
}

/** asample: a sampling of the weights a serving name names (resolved from the sampling session). */
export type TinkerSampleCall = Omit<SampleTokensRequest, 'request_id' | 'entity_id' | 'entity_name'>;

/** Stored as a future, run by the orchestrator through chat's token sampling. */
export interface SubmitTinkerSampleRequest extends CallerScope {
  sample: TinkerSampleCall;
}

/** Saved sampler weights of the caller's, by their `tinker://<client>/sampler_weights/<name>` path. */
export interface ResolveTinkerSamplerRequest extends CallerScope {
  path: string;
}

export interface ResolveTinkerSamplerReply {
  /** The serving name chat samples and completes it by (`<model>:step<n>`). */
  model: string;
  base_model: string;
}

// ---------------------------------------------------------------- training runs (the REST client's listings)

/** A saved sampler weight (`sampler`) or saved state (`training`), as the SDK's Checkpoint. */
export interface TinkerCheckpointRecord {
  checkpoint_id: string;
  checkpoint_type: 'training' | 'sampler';
  /** ISO time it was saved. */
  time: string;
  tinker_path: string;
  size_bytes: number | null;
}

/** A training client, as the SDK's TrainingRun. */
export interface TinkerTrainingRunRecord {
  training_run_id: string;
  base_model: string;
  model_owner: string;
  is_lora: true;
  corrupted: boolean;
  lora_rank: number;
  last_request_time: string;
  last_checkpoint: TinkerCheckpointRecord | null;
  last_sampler_checkpoint: TinkerCheckpointRecord | null;
}

export interface ListTinkerTrainingRunsRequest extends CallerScope {
  limit: number;
  offset: number;
}

export interface TinkerTrainingRunsReply {
  training_runs: TinkerTrainingRunRecord[];
  cursor: { offset: number; limit: number; total_count: number };
}

export interface TinkerTrainingRunRequest extends CallerScope {
  training_run_id: string;
}

export interface TinkerCheckpointsReply {
  checkpoints: TinkerCheckpointRecord[];
}

export interface RetrieveTinkerFutureRequest extends CallerScope {
  request_id: string;
}

export type TinkerFutureState =
  | { state: 'pending'; kind: TinkerFutureKind }
  /** result inline when small, else parked as a blob. */
  | { state: 'succeeded'; kind: TinkerFutureKind; result?: TinkerResult; result_blob?: BlobRef<TinkerResult> }
  | { state: 'failed'; kind: TinkerFutureKind; error: string; category: 'User' | 'Server' | 'Unknown' };

// ---------------------------------------------------------------- worker <-> orchestrator

/** The work queue's message: one future to run. */
export interface TinkerWorkItem {
  request_id: string;
}

export interface ClaimTinkerCallRequest {
  request_id: string;
  worker: string;
}

export interface ClaimedTinkerCall {
  request_id: string;
  seq_id: number;
  /** The training client: its id, owner, registry model and LoRA settings. */
  client_id: string;
  entity_id: string;
  entity_name: string;
  /** The registry model the client trains (its checkpoints are the saved sampler weights). */
  model_id: string;
  model_name: string;
  base_model: string;
  lora_config: TinkerLoraConfig;
  /** seq_id of the client's last applied call: 0 for a client no call has touched yet. */
  applied_seq: number;
  call: BlobRef<TinkerCall>;
}

export type ClaimTinkerCallReply =
  | { action: 'run'; call: ClaimedTinkerCall }
  /** Done already, or failed without running (the client's state was lost): acknowledge and drop. */
  | { action: 'skip'; reason: string }
  /** Not this call's turn yet (an earlier seq_id is not applied), or another worker holds the client: retry soon. */
  | { action: 'wait'; reason: string };

export type CompleteTinkerCallRequest = {
  request_id: string;
  worker: string;
} & (
  | { outcome: 'succeeded'; result: BlobRef<TinkerResult> }
  | {
      outcome: 'failed';
      error: string;
      category: 'User' | 'Server';
      /** The worker does not hold the client's state it was asked to continue: every later call fails too. */
      state_lost?: boolean;
    }
);

// ---------------------------------------------------------------- saved states

/** Worker to orchestrator: keep a client's saved state (a safetensors file of adapter and Adam moments). */
export interface StoreTinkerStateRequest {
  /** The save_weights call: storing twice for one call keeps the first. */
  request_id: string;
  entity_id: string;
  client_id: string;
  path: string;
  overwrite: boolean;
  base_model: string;
  lora_config: TinkerLoraConfig;
  /** The state file (safetensors), stored by the worker in the artifact store. */
  state: { sha256: string; bytes: number };
}

/** A saved state of the caller's entity, by its tinker:// path. */
export interface TinkerStateRequest extends CallerScope {
  path: string;
}

export interface TinkerStateReply {
  path: string;
  base_model: string;
  lora_config: TinkerLoraConfig;
  /** The state file's digest in the artifact store. */
  sha256: string;
}

/** What create_training_client_from_state asks before it creates the client (the SDK's WeightsInfoResponse). */
export interface TinkerWeightsInfoReply {
  base_model: string;
  is_lora: boolean;
  lora_rank: number;
  train_unembed: boolean;
  train_mlp: boolean;
  train_attn: boolean;
}
