/**
 * The JSON shapes of the Tinker SDK's HTTP protocol (tinker 0.25.0, src/tinker/types), for the
 * routes this service answers. Field names are the SDK's; the gateway validates requests
 * against its own DTOs, these are the shapes both sides agree on.
 */

/** POST /api/v1/client/config: feature flags; every one optional for the SDK. */
export interface ClientConfigResponse {
  /** false: the SDK keeps httpx's own transport (pyqwest is a Rust extension). */
  use_pyqwest_transport: boolean;
  /** false: forward_backward bodies are plain protobuf, not zstd. */
  proto_compress_fwdbwd: boolean;
  parallel_fwdbwd_chunks: boolean;
  fwdbwd_max_chunk_len: number;
  fwdbwd_max_chunk_bytes_count: number;
  pjwt_auth_enabled: boolean;
  sample_no_retries: boolean;
  create_model_via_load_weights: boolean;
}

export interface ClientDynamicConfigResponse {
  refresh_interval_sec: number;
}

export interface SupportedModel {
  model_name: string;
  max_context_length?: number;
}

export interface GetServerCapabilitiesResponse {
  supported_models: SupportedModel[];
}

export interface CreateSessionResponse {
  session_id: string;
  info_message?: string | null;
  warning_message?: string | null;
  error_message?: string | null;
}

export interface LoraConfig {
  rank: number;
  seed?: number | null;
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}

/** What every submit route answers at once. */
export interface UntypedApiFuture {
  request_id: string;
  model_id?: string;
}

export interface CreateModelResponse {
  model_id: string;
  type: 'create_model';
}

export interface AdamParamsJson {
  learning_rate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weight_decay: number;
  grad_clip_norm: number;
}

export interface OptimStepResponse {
  metrics?: Record<string, number> | null;
}

export interface SaveWeightsForSamplerResponse {
  path: string;
  sampling_session_id?: string | null;
  type: 'save_weights_for_sampler';
}

/** retrieve_future while the work is not done: the SDK polls again at once. */
export interface TryAgainResponse {
  type: 'try_again';
  request_id: string;
  queue_state: 'active' | 'paused_capacity' | 'paused_rate_limit';
  queue_state_reason?: string | null;
}

export type RequestErrorCategory = 'User' | 'Server' | 'Unknown';

/** retrieve_future for work that failed: the SDK raises RequestFailedError with it. */
export interface RequestFailedResponse {
  error: string;
  category: RequestErrorCategory;
}

/** A TensorData in JSON (forward_backward's JSON result). */
export interface TensorDataJson {
  data: number[];
  dtype: 'float32' | 'int64';
  shape: number[];
}

export interface ForwardBackwardOutputJson {
  loss_fn_output_type: 'ArrayRecord';
  loss_fn_outputs: Record<string, TensorDataJson>[];
  metrics: Record<string, number>;
}

/** `tinker://<model_id>/sampler_weights/<name>`: how the SDK names saved sampler weights. */
export function samplerWeightsPath(modelId: string, name: string): string {
  return `tinker://${modelId}/sampler_weights/${name}`;
}

/** The training client and name of a `tinker://<model_id>/sampler_weights/<name>` path; null for any other string. */
export function parseSamplerWeightsPath(path: string): { modelId: string; name: string } | null {
  const match = /^tinker:\/\/([^/]+)\/sampler_weights\/(.+)$/.exec(path);
  return match ? { modelId: match[1], name: match[2] } : null;
}

/**
 * A sampling session is a handle on the weights it samples: their serving name, encoded. It
 * needs no storage (it survives any restart, on any gateway replica), and names nothing a key
 * could not name itself: chat resolves the serving name with the caller's own scope.
 */
export function samplingSessionId(servingName: string): string {
  return `sampling-${Buffer.from(servingName, 'utf8').toString('base64url')}`;
}

/** The serving name a sampling session samples; null when the id is not one samplingSessionId made. */
export function servingNameOfSamplingSession(id: string): string | null {
  if (!id.startsWith('sampling-')) return null;
  const name = Buffer.from(id.slice('sampling-'.length), 'base64url').toString('utf8');
  return name.length > 0 && samplingSessionId(name) === id ? name : null;
}

/** `tinker://<model_id>/weights/<name>`: how the SDK names a saved state (save_state). */
export function statePath(modelId: string, name: string): string {
  return `tinker://${modelId}/weights/${name}`;
}

/** A training client's id as the SDK expects it: `<session_id>:train:<model_seq_id>`. */
export function trainingClientId(sessionId: string, modelSeqId: number): string {
  return `${sessionId}:train:${modelSeqId}`;
}

/** The built-in losses the SDK names (LossFnType). */
export const TINKER_LOSS_FUNCTIONS = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'] as const;
