import { Type } from 'class-transformer';
import { Allow, IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateIf, ValidateNested } from 'class-validator';

/**
 * The JSON bodies of the Tinker SDK's routes (tinker 0.25.0, src/tinker/types). Fields the SDK
 * sends that nothing here reads (`type`, `project_id`, `user_metadata` of a model) are stripped.
 */

/** POST /api/v1/client/config and client/dynamic_config */
export class ClientConfigRequest {
  @IsOptional()
  @IsString()
  sdk_version?: string;
}

/** POST /api/v1/create_session */
export class CreateSessionRequest {
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  tags: string[] = [];

  @IsOptional()
  @IsObject()
  user_metadata: Record<string, unknown> = {};

  @IsOptional()
  @IsString()
  sdk_version?: string;
}

/** POST /api/v1/session_heartbeat */
export class SessionHeartbeatRequest {
  @IsString()
  session_id!: string;
}

export class LoraConfigBody {
  @IsInt()
  @Min(1)
  @Max(256)
  rank!: number;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt()
  seed: number | null = null;

  @IsOptional()
  @IsBoolean()
  train_unembed = true;

  @IsOptional()
  @IsBoolean()
  train_mlp = true;

  @IsOptional()
  @IsBoolean()
  train_attn = true;
}

/** POST /api/v1/create_model */
export class CreateModelRequest {
  @IsString()
  session_id!: string;

  @IsInt()
  @Min(0)
  @Max(1_000_000)
  model_seq_id!: number;

  @IsString()
  @MaxLength(256)
  base_model!: string;

  /** The SDK's default when absent: rank 32, every part trained. */
  @IsOptional()
  @ValidateNested()
  @Type(() => LoraConfigBody)
  lora_config?: LoraConfigBody;
}

export class AdamParamsBody {
  @IsNumber()
  @Min(0)
  learning_rate = 1e-4;

  @IsNumber()
  @Min(0)
  @Max(0.999999)
  beta1 = 0.9;

  @IsNumber()
  @Min(0)
  @Max(0.999999)
  beta2 = 0.95;

  @IsNumber()
  @Min(0)
  eps = 1e-12;

  @IsOptional()
  @IsNumber()
  @Min(0)
  weight_decay = 0;

  /** 0: no clipping. */
  @IsOptional()
  @IsNumber()
  @Min(0)
  grad_clip_norm = 0;
}

/** POST /api/v1/optim_step */
export class OptimStepRequest {
  @IsString()
  model_id!: string;

  @IsInt()
  @Min(1)
  seq_id!: number;

  @ValidateNested()
  @Type(() => AdamParamsBody)
  adam_params!: AdamParamsBody;
}

/** POST /api/v1/save_weights_for_sampler */
export class SaveWeightsForSamplerRequest {
  @IsString()
  model_id!: string;

  @IsInt()
  @Min(1)
  seq_id!: number;

  /** The name under tinker://<model_id>/sampler_weights/. */
  @IsOptional()
  @Matches(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/, { message: 'path must be 1 to 128 letters, digits, ".", "_" or "-"' })
  path?: string;

  @IsOptional()
  @IsInt()
  sampling_session_seq_id?: number;

  @IsOptional()
  @IsInt()
  ttl_seconds?: number;
}

/** POST /api/v1/save_weights (the SDK's save_state) */
export class SaveWeightsRequest {
  @IsString()
  model_id!: string;

  @IsInt()
  @Min(1)
  seq_id!: number;

  /** The name under tinker://<model_id>/weights/. */
  @Matches(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/, { message: 'path must be 1 to 128 letters, digits, ".", "_" or "-"' })
  path!: string;

  @IsOptional()
  @IsBoolean()
  overwrite = false;

  @IsOptional()
  @IsInt()
  ttl_seconds?: number;
}

/** POST /api/v1/load_weights (load_state, load_state_with_optimizer) */
export class LoadWeightsRequest {
  /** Required here: creating a client through load_weights (create_model_via_load_weights) is off. */
  @IsString()
  model_id!: string;

  @IsInt()
  @Min(1)
  seq_id!: number;

  @Matches(/^tinker:\/\/\S+\/weights\/\S+$/, { message: 'path must be a tinker://<model_id>/weights/<name> path that save_state returned' })
  path!: string;

  @IsBoolean()
  optimizer!: boolean;
}

/** POST /api/v1/weights_info */
export class WeightsInfoRequest {
  @IsString()
  tinker_path!: string;
}

/** POST /api/v1/retrieve_future */
export class RetrieveFutureRequest {
  @IsString()
  request_id!: string;

  @IsOptional()
  @IsBoolean()
  allow_metadata_only = false;
}

/** POST /api/v1/create_sampling_session: a base model, or saved sampler weights by their tinker:// path. */
export class CreateSamplingSessionRequest {
  @IsString()
  session_id!: string;

  @IsInt()
  sampling_session_seq_id!: number;

  @IsOptional()
  @IsString()
  base_model?: string;

  @IsOptional()
  @IsString()
  model_path?: string;
}

/** One chunk of a ModelInput: only token chunks (encoded_text); images are not served here. */
export class ModelInputChunkBody {
  @IsIn(['encoded_text'], { message: 'only encoded_text chunks are supported (no image chunks)' })
  type!: 'encoded_text';

  @IsArray()
  @IsInt({ each: true })
  tokens!: number[];
}

export class ModelInputBody {
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ModelInputChunkBody)
  chunks!: ModelInputChunkBody[];
}

/** The SDK's SamplingParams, its defaults filled in; chat checks the values against the model. */
export class SamplingParamsBody {
  @IsOptional()
  @IsInt()
  max_tokens?: number | null;

  @IsOptional()
  @IsNumber()
  temperature = 1;

  @IsOptional()
  @IsInt()
  top_k = -1;

  @IsOptional()
  @IsNumber()
  top_p = 1;

  @IsOptional()
  @IsInt()
  seed?: number | null;

  /** A string, strings or token ids (chat checks which). */
  @Allow()
  stop?: unknown;
}

/** POST /api/v1/asample */
export class SampleRequest {
  @IsOptional()
  @IsInt()
  @Min(1)
  num_samples = 1;

  @ValidateNested()
  @Type(() => ModelInputBody)
  prompt!: ModelInputBody;

  @ValidateNested()
  @Type(() => SamplingParamsBody)
  sampling_params!: SamplingParamsBody;

  @IsOptional()
  @IsString()
  sampling_session_id?: string;

  @IsOptional()
  @IsString()
  base_model?: string;

  @IsOptional()
  @IsString()
  model_path?: string;

  @IsOptional()
  @IsInt()
  seq_id?: number;

  @IsOptional()
  @IsBoolean()
  prompt_logprobs?: boolean;

  @IsOptional()
  @IsInt()
  @Min(0)
  topk_prompt_logprobs = 0;
}

/** GET /api/v1/training_runs (the REST client's list_training_runs); access_scope and project_id are read as "owned" and all. */
export class ListTrainingRunsQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit = 20;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  offset = 0;

  @Allow()
  access_scope?: unknown;

  @Allow()
  project_id?: unknown;
}
