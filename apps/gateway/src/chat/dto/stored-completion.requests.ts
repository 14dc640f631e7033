import type { SortOrder } from '@trainyard/contracts';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min, ValidateBy, ValidateIf, ValidationOptions } from 'class-validator';
import { IsOpenAiMetadata, isStorableText } from '../../fine-tuning/dto/fine-tuning.validators';
import { PageQuery } from '../../http/page.query';

/** Text a query can compare in PostgreSQL: no NUL character, no half of a surrogate pair. */
function IsStorableText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStorableText',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isStorableText(value),
        defaultMessage: (args) => `${args?.property} must be text without NUL characters or unpaired surrogates`,
      },
    },
    options,
  );
}

/** GET /v1/chat/completions: `after`, `limit`, `order` (oldest first by default, as OpenAI) and `model`; `metadata[k]=v` is read from the raw query. */
export class ListChatCompletionsQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';

  @IsOptional()
  @IsString()
  @MaxLength(1024)
  @IsStorableText()
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

/** The last second a Date holds (year 275760): a time range past it names no time. */
const MAX_UNIX_SECONDS = 8_640_000_000_000;

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
  ids?: string[] | null;

  @IsOptional()
  @IsString()
  @MaxLength(1024)
  @IsStorableText()
  model?: string | null;

  /** Every pair must match. */
  @IsOptional()
  @IsOpenAiMetadata()
  metadata?: Record<string, string> | null;

  /** Unix seconds: made at or after. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_UNIX_SECONDS)
  created_after?: number | null;

  /** Unix seconds: made before. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_UNIX_SECONDS)
  created_before?: number | null;

  /** `art`: the metadata key whose value puts trajectories in one group (default `group_id`); without it, each stands alone. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  group_by: string | null = 'group_id';

  /** The metadata key whose records are the turns of one run, exported as one trajectory (default `trajectory_id`). */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  trajectory_by: string | null = 'trajectory_id';

  /** `art`: the metadata key whose value (a number, as text) is the trajectory's reward (default `reward`). */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  reward_key: string | null = 'reward';
}
