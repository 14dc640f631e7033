import { Transform, Type } from 'class-transformer';
import { FineTuningHyperparametersInput, ServiceError } from '@trainyard/contracts';
import { IsIn, IsInt, IsObject, IsString, Matches, Max, MaxLength, Min, ValidateIf, ValidateNested } from 'class-validator';
import { IsAutoOr, IsOpenAiMetadata } from './fine-tuning.validators';

const given = (_: unknown, value: unknown) => value !== null && value !== undefined;

/** n_epochs, batch_size and learning_rate_multiplier, each "auto" or a value, within OpenAI's ranges. */
export class SupervisedHyperparameters {
  @ValidateIf(given)
  @IsAutoOr({ integer: true, min: 1, max: 50 })
  n_epochs?: number | 'auto';

  @ValidateIf(given)
  @IsAutoOr({ integer: true, min: 1, max: 256 })
  batch_size?: number | 'auto';

  @ValidateIf(given)
  @IsAutoOr({ integer: false, min: 0, max: 10, exclusiveMin: true })
  learning_rate_multiplier?: number | 'auto';
}

export class SupervisedMethod {
  @ValidateIf(given)
  @IsObject()
  @ValidateNested()
  @Type(() => SupervisedHyperparameters)
  hyperparameters?: SupervisedHyperparameters | null;
}

export class FineTuningMethod {
  @IsIn(['supervised'], {
    message: (args) =>
      `type must be "supervised": ${JSON.stringify(args.value)} fine-tuning is not offered here (DPO and reinforcement fine-tuning are not; RL training is the preview training API)`,
  })
  type!: string;

  @ValidateIf(given)
  @IsObject()
  @ValidateNested()
  @Type(() => SupervisedMethod)
  supervised?: SupervisedMethod | null;
}

/** Letters, digits, ".", "_" and "-" (it becomes part of the model's name), at most 64 of them. */
const SUFFIX = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/;

/**
 * POST /v1/fine_tuning/jobs, as the openai SDKs send it. The files, the base model and every
 * line of the data are checked by the training orchestrator before the job is made;
 * `integrations` and other unknown fields are dropped.
 */
export class CreateFineTuningJobRequest {
  @IsString()
  @MaxLength(256)
  model!: string;

  @IsString()
  @MaxLength(64)
  training_file!: string;

  @ValidateIf(given)
  @IsString()
  @MaxLength(64)
  validation_file: string | null = null;

  /** An empty suffix is no suffix. */
  @Transform(({ value }) => (value === '' ? null : value))
  @ValidateIf(given)
  @IsString()
  @Matches(SUFFIX, { message: 'suffix must be 1 to 64 letters, digits, ".", "_" or "-", not starting with "." or "-"' })
  suffix: string | null = null;

  @ValidateIf(given)
  @IsInt()
  @Min(0)
  @Max(2_147_483_647)
  seed: number | null = null;

  @ValidateIf(given)
  @IsOpenAiMetadata()
  metadata: Record<string, string> | null = null;

  /** The legacy place of the hyperparameters, before `method`. */
  @ValidateIf(given)
  @IsObject()
  @ValidateNested()
  @Type(() => SupervisedHyperparameters)
  hyperparameters: SupervisedHyperparameters | null = null;

  @ValidateIf(given)
  @IsObject()
  @ValidateNested()
  @Type(() => FineTuningMethod)
  method: FineTuningMethod | null = null;
}

const HYPERPARAMETERS = ['n_epochs', 'batch_size', 'learning_rate_multiplier'] as const;

/**
 * The hyperparameters asked for: method.supervised.hyperparameters and the legacy top-level
 * hyperparameters, merged. One named in both places with two different values is refused.
 */
export function requestedHyperparameters(body: CreateFineTuningJobRequest): FineTuningHyperparametersInput {
  const legacy = body.hyperparameters ?? {};
  const method = body.method?.supervised?.hyperparameters ?? {};
  const merged: FineTuningHyperparametersInput = {};
  for (const key of HYPERPARAMETERS) {
    const [a, b] = [method[key] ?? undefined, legacy[key] ?? undefined];
    if (a !== undefined && b !== undefined && a !== b) {
      throw ServiceError.validation([
        {
          loc: ['body', 'hyperparameters', key],
          msg: `hyperparameters.${key} (${JSON.stringify(b)}) differs from method.supervised.hyperparameters.${key} (${JSON.stringify(a)}); send it in method only`,
          type: 'value_error',
        },
      ]);
    }
    const value = a ?? b;
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}
