import { ValidateBy, ValidationOptions } from 'class-validator';

/** A hyperparameter: "auto", or a number within [min, max] (an integer when `integer`; `min` exclusive when `exclusiveMin`). */
export function IsAutoOr(bounds: { integer: boolean; min: number; max: number; exclusiveMin?: boolean }, options?: ValidationOptions): PropertyDecorator {
  const kind = bounds.integer ? 'an integer' : 'a number';
  const low = bounds.exclusiveMin ? `greater than ${bounds.min}` : `at least ${bounds.min}`;
  return ValidateBy(
    {
      name: 'isAutoOr',
      validator: {
        validate: (value: unknown) =>
          value === 'auto' ||
          (typeof value === 'number' &&
            Number.isFinite(value) &&
            (!bounds.integer || Number.isInteger(value)) &&
            (bounds.exclusiveMin ? value > bounds.min : value >= bounds.min) &&
            value <= bounds.max),
        defaultMessage: (args) => `${args?.property} must be "auto" or ${kind} ${low} and at most ${bounds.max}`,
      },
    },
    options,
  );
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No NUL and no half of a surrogate pair: text PostgreSQL can store (metadata is stored as jsonb, and filtered on there). */
export function isStorableText(text: string): boolean {
  return !text.includes(String.fromCharCode(0)) && !LONE_SURROGATE.test(text);
}

const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;

/** OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, string values of at most 512. */
export function IsOpenAiMetadata(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isOpenAiMetadata',
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
          const entries = Object.entries(value);
          return (
            entries.length <= MAX_METADATA_PAIRS &&
            entries.every(
              ([key, v]) => key.length <= MAX_METADATA_KEY && typeof v === 'string' && v.length <= MAX_METADATA_VALUE && isStorableText(key) && isStorableText(v),
            )
          );
        },
        defaultMessage: (args) =>
          `${args?.property} must be an object of at most ${MAX_METADATA_PAIRS} pairs, keys of at most ${MAX_METADATA_KEY} characters and string values of at most ${MAX_METADATA_VALUE}, without NUL characters or unpaired surrogates`,
      },
    },
    options,
  );
}
