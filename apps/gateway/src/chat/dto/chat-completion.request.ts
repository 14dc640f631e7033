import { JsonSchemaFormat, RESPONSE_FORMAT_TYPES, ResponseFormat } from '@trainyard/contracts';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  Equals,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { IsOpenAiMetadata } from '../../fine-tuning/dto/fine-tuning.validators';
import { IsChatContent, IsParametersSchema, IsStopSequences, IsTemplateKwargs, IsToolChoice } from './chat-content.validators';

export class ToolCallFunctionDto {
  @IsString()
  name!: string;

  @IsString()
  arguments!: string;
}

export class ToolCallDto {
  @IsString()
  id!: string;

  @Equals('function')
  type!: 'function';

  @IsObject()
  @ValidateNested()
  @Type(() => ToolCallFunctionDto)
  function!: ToolCallFunctionDto;
}

export class ChatMessageDto {
  @IsIn(['system', 'developer', 'user', 'assistant', 'tool'])
  role!: 'system' | 'developer' | 'user' | 'assistant' | 'tool';

  @IsChatContent()
  content?: string | { type: 'text'; text: string }[] | null;

  @IsOptional()
  @IsString()
  name?: string;

  @IsOptional()
  @IsArray()
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => ToolCallDto)
  tool_calls?: ToolCallDto[];

  @IsOptional()
  @IsString()
  tool_call_id?: string;

  /** An assistant turn's reasoning, as a reasoning model returned it (vLLM's and DeepSeek's field). */
  @IsOptional()
  @IsString()
  reasoning_content?: string;
}

export class JsonSchemaDto implements JsonSchemaFormat {
  @IsString()
  @IsNotEmpty()
  name!: string;

  /** Required: without it the reply would be any JSON, not the document the client asked for. */
  @IsObject()
  schema!: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  strict?: boolean | null;
}

/** The contracts' ResponseFormat, validated. */
export class ResponseFormatDto {
  @IsIn(RESPONSE_FORMAT_TYPES)
  type!: ResponseFormat['type'];

  @ValidateIf((o: ResponseFormatDto) => o.type === 'json_schema')
  @IsObject()
  @ValidateNested()
  @Type(() => JsonSchemaDto)
  json_schema?: JsonSchemaDto;
}

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export class FunctionDefinitionDto {
  @Matches(FUNCTION_NAME, { message: 'name must be 1 to 64 letters, digits, underscores or dashes' })
  name!: string;

  @IsOptional()
  @IsString()
  description?: string;

  /** The JSON schema of the arguments object; compiled into the decoding grammar by the chat service. */
  @IsOptional()
  @IsParametersSchema()
  parameters?: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  strict?: boolean | null;
}

export class FunctionToolDto {
  @Equals('function')
  type!: 'function';

  @IsObject()
  @ValidateNested()
  @Type(() => FunctionDefinitionDto)
  function!: FunctionDefinitionDto;
}

export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean()
  include_usage?: boolean;
}

/** POST /v1/chat/completions. Unknown fields (extra_body and the like) are dropped, not refused. */
export class ChatCompletionRequest {
  /** Longer than any name that can resolve (base model ids, wandb-artifact:/// names of 128-character segments). */
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  model!: string;

  @IsArray()
  @ArrayMinSize(1)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages!: ChatMessageDto[];

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(2)
  temperature?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  top_p?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  n?: number;

  @IsOptional()
  @IsStopSequences()
  stop?: string | string[] | null;

  /** Any integer JSON can carry exactly; 1e308 is an integer to JavaScript but seeds nothing. */
  @IsOptional()
  @IsInt()
  @Min(Number.MIN_SAFE_INTEGER)
  @Max(Number.MAX_SAFE_INTEGER)
  seed?: number;

  @IsOptional()
  @IsBoolean()
  logprobs?: boolean | null;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(20)
  top_logprobs?: number;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ResponseFormatDto)
  response_format?: ResponseFormatDto;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  @IsOptional()
  @IsArray()
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => FunctionToolDto)
  tools?: FunctionToolDto[];

  @IsOptional()
  @IsToolChoice()
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } } | null;

  @IsOptional()
  @IsBoolean()
  parallel_tool_calls?: boolean;

  @IsOptional()
  @IsString()
  user?: string;

  /** Extension the RL client relies on: token ids of the prompt and of each choice. */
  @IsOptional()
  @IsBoolean()
  return_token_ids?: boolean;

  /** Extension (vLLM, SGLang): variables for the model's chat template, e.g. {"enable_thinking": false}. */
  @IsOptional()
  @IsTemplateKwargs()
  chat_template_kwargs?: Record<string, unknown> | null;

  /** OpenAI's stored completions: keep this one (off by default, as OpenAI), with the tokens served, for listing and export. */
  @IsOptional()
  @IsBoolean()
  store?: boolean | null;

  /** Kept with a stored completion; what lists and exports filter on. */
  @IsOptional()
  @IsOpenAiMetadata()
  metadata?: Record<string, string> | null;
}
