import type { SortOrder } from '@trainyard/contracts';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min, ValidateIf } from 'class-validator';
import { IsOpenAiMetadata } from '../../fine-tuning/dto/fine-tuning.validators';
import { PageQuery } from '../../http/page.query';

/** GET /v1/chat/completions: `after`, `limit`, `order` (oldest first by default, as OpenAI) and `model`; `metadata[k]=v` is read from the raw query. */
export class ListChatCompletionsQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';

  @IsOptional()
  @IsString()
  @MaxLength(1024)
  model?: string;
}

/** GET /v1/chat/completions/{id}/messages. */
export class ListChatCompletionMessagesQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';
}

/** POST /v1/chat/completions/{id}: OpenAI lets only the metadata change; null clears it. */
export class UpdateChatCompletionRequest {
  @ValidateIf((_, value) => value !== null)
  @IsOpenAiMetadata()
  metadata!: Record<string, string> | null;
}

/** The largest `ids` list an export takes. */
export const MAX_EXPORT_IDS = 1000;

/**
 * POST /v1/chat/completions/export and POST /v1/responses/export: which stored traffic to
 * export (every condition given must hold) and in which shape.
 */
export class ExportTrafficRequest {
  /** `sft`: OpenAI's chat JSONL, as /v1/files takes for fine-tuning. `art`: ART trajectory groups, as /v1/preview/training-jobs takes. */
  @IsIn(['sft', 'art'])
  format!: 'sft' | 'art';

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_EXPORT_IDS)
  @IsString({ each: true })
  ids?: string[];

  @IsOptional()
  @IsString()
  @MaxLength(1024)
  model?: string;

  /** Every pair must match. */
  @IsOptional()
  @IsOpenAiMetadata()
  metadata?: Record<string, string>;

  /** Unix seconds: made at or after. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  created_after?: number;

  /** Unix seconds: made before. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  created_before?: number;

  /** `art`: the metadata key whose value puts trajectories in one group (default `group_id`); without it, each stands alone. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  group_by = 'group_id';

  /** `art`: the metadata key whose value (a number, as text) is the trajectory's reward (default `reward`). */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  reward_key = 'reward';
}
