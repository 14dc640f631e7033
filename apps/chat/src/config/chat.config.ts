import { withArtifactCache } from '@trainyard/artifacts';
import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { Type } from 'class-transformer';
import { IsInt, Matches, Max, Min } from 'class-validator';

/**
 * The artifact store's and cache's settings (withArtifactCache) serve BASE_MODEL_SOURCE=store:
 * chat then reads base models' tokenizers from their bundles, without a models volume.
 */
export class ChatConfig extends withArtifactCache(BaseServiceConfig) {
  override HTTP_PORT = 3101;

  /** Stored responses and conversations (the Responses API's state) live here. */
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /**
   * Days a stored response stays readable (and continuable with previous_response_id) after
   * it was created, and a conversation after its last change; after that it is deleted.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3650)
  RESPONSE_RETENTION_DAYS = 30;

  /** Completions admitted beyond the ready workers' slots, counted exactly as they are admitted and end; past it, 429. */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  MAX_QUEUED_COMPLETIONS = 16;

  /** How long a queued completion stays worth starting. */
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  COMPLETION_DEADLINE_MS = 120_000;

  /** How often the list of inference workers (ready or not, and their slots) is refreshed. */
  @Type(() => Number)
  @IsInt()
  @Min(100)
  WORKER_POLL_MS = 1_000;

  /**
   * How long a worker that stops answering polls still counts as present. A worker deep in a
   * long forward pass answers late; one that died is caught sooner by its completions'
   * liveness probes, and is forgotten after this.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  WORKER_STALE_MS = 15_000;

  /** Model-name resolutions chat keeps; past it, the least recently used is dropped. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MODEL_RESOLUTION_CACHE_SIZE = 10_000;

  /**
   * Longest a resolution is served from chat's cache. Only a backstop: the registry announces
   * every change before acknowledging it, and the cache drops the model's names at once.
   * 0 turns the cache off (every completion asks the registry).
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  MODEL_RESOLUTION_CACHE_TTL_MS = 30_000;

  /**
   * Base models whose tokenizer and chat template chat keeps, to count prompts before they
   * are queued; past it, the least recently used is dropped (and read again when next used).
   * Each holds its tokenizer in memory: about 36 MiB for a 49152-token vocabulary.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  PROMPT_TOKENIZER_CACHE_SIZE = 4;

  /** Token samplings (Tinker's asample): most samples one request may ask for. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(256)
  MAX_TOKEN_SAMPLES = 16;

  /** Token samplings: most tokens per sample (sampling_params.max_tokens), and what a request without max_tokens gets. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MAX_SAMPLE_TOKENS = 4096;

  /** Token samplings: most top-k prompt logprobs per position (topk_prompt_logprobs). */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(1000)
  MAX_TOPK_PROMPT_LOGPROBS = 20;
}
