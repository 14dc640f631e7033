import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';
import { IsTemplateKwargs } from '../../chat/dto/chat-content.validators';
import { IsMetadata } from '../../http/metadata';

/** Longest id a stored response or conversation may be named by (ours are 37 and 53 characters). */
export const MAX_ID_LENGTH = 128;

export class TextFormatDto {
  @IsIn(['text', 'json_object', 'json_schema'])
  type!: 'text' | 'json_object' | 'json_schema';

  @ValidateIf((o: TextFormatDto) => o.type === 'json_schema')
  @IsString()
  @IsNotEmpty()
  name?: string;

  @ValidateIf((o: TextFormatDto) => o.type === 'json_schema')
  @IsObject()
  schema?: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  strict?: boolean | null;

  @IsOptional()
  @IsString()
  description?: string;
}

export class ReasoningConfigDto {
  @IsOptional()
  @IsIn(['none', 'minimal', 'low', 'medium', 'high'])
  effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | null;
}

export class TextConfigDto {
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TextFormatDto)
  format?: TextFormatDto;
}

/**
 * POST /v1/responses. The items of `input` and `tools` are checked one by one where they are
 * turned into items and a chat request (response-items, ResponseRequestMapper), which name the
 * item that is wrong. Unknown fields (extra_body and the like) are dropped, not refused.
 */
export class CreateResponseRequest {
  /** As for chat completions: longer than any name that can resolve. */
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  model!: string;

  @IsResponseInput()
  input!: string | Record<string, unknown>[];

  @IsOptional()
  @IsString()
  instructions?: string | null;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_output_tokens?: number | null;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(2)
  temperature?: number | null;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  top_p?: number | null;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => TextConfigDto)
  text?: TextConfigDto;

  @IsOptional()
  @IsArray()
  @IsObject({ each: true })
  tools?: Record<string, unknown>[];

  @IsOptional()
  @IsResponsesToolChoice()
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; name: string };

  @IsOptional()
  @IsBoolean()
  parallel_tool_calls?: boolean | null;

  @IsOptional()
  @IsBoolean()
  stream?: boolean | null;

  /** Keep the response and its input items for retrieval and continuation; OpenAI's default is true. */
  @IsOptional()
  @IsBoolean()
  store?: boolean | null;

  /** The earlier turns: that stored response's input items and output, before this input. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_ID_LENGTH)
  previous_response_id?: string | null;

  /** A conversation (its id, or `{id}`): its items are the earlier turns, and this input and output are appended to it. */
  @IsOptional()
  @IsConversationRef()
  conversation?: string | { id: string } | null;

  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string> | null;

  /** `message.output_text.logprobs` puts logprobs on the output text; other values are accepted and have nothing to add. */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  include?: string[] | null;

  /** Alternatives per output token, with `include: ["message.output_text.logprobs"]`. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(20)
  top_logprobs?: number | null;

  @IsOptional()
  @IsString()
  user?: string;

  /** `effort: "none"` turns a reasoning model's thinking off (chat_template_kwargs' enable_thinking: false). */
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ReasoningConfigDto)
  reasoning?: ReasoningConfigDto | null;

  /** Extension (vLLM, SGLang): variables for the model's chat template, e.g. {"enable_thinking": false}. */
  @IsOptional()
  @IsTemplateKwargs()
  chat_template_kwargs?: Record<string, unknown> | null;
}

/** `conversation`: an id, or `{id}`. */
function IsConversationRef(options?: ValidationOptions): PropertyDecorator {
  const isId = (value: unknown) => typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;
  return ValidateBy(
    {
      name: 'isConversationRef',
      validator: {
        validate: (value: unknown) => isId(value) || (typeof value === 'object' && value !== null && isId((value as { id?: unknown }).id)),
        defaultMessage: () => `conversation must be a conversation id or {"id": ...}, of at most ${MAX_ID_LENGTH} characters`,
      },
    },
    options,
  );
}

/** `input`: a non-empty string, or a non-empty list of item objects. */
function IsResponseInput(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isResponseInput',
      validator: {
        validate: (value: unknown) =>
          (typeof value === 'string' && value.length > 0) ||
          (Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'object' && item !== null && !Array.isArray(item))),
        defaultMessage: () => 'input must be a non-empty string or a non-empty array of input items',
      },
    },
    options,
  );
}

/** Responses' `tool_choice`: "none", "auto", "required" or {type: "function", name}. */
function IsResponsesToolChoice(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isResponsesToolChoice',
      validator: {
        validate: (value: unknown) =>
          ['none', 'auto', 'required'].includes(value as string) ||
          (typeof value === 'object' &&
            value !== null &&
            (value as { type?: unknown }).type === 'function' &&
            typeof (value as { name?: unknown }).name === 'string'),
        defaultMessage: () => 'tool_choice must be "none", "auto", "required" or {"type": "function", "name": ...}',
      },
    },
    options,
  );
}
