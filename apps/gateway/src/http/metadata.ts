import { ValidateBy, ValidationArguments, ValidationOptions } from 'class-validator';
import { isStorableText } from '../fine-tuning/dto/fine-tuning.validators';

/** OpenAI's `metadata`: at most 16 pairs, keys of at most 64 characters, string values of at most 512. */
export const METADATA_LIMITS = { pairs: 16, keyLength: 64, valueLength: 512 } as const;

export function metadataProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'metadata must be an object of string values';
  const entries = Object.entries(value);
  if (entries.length > METADATA_LIMITS.pairs) return `metadata may have at most ${METADATA_LIMITS.pairs} keys; it has ${entries.length}`;
  for (const [key, v] of entries) {
    if (key.length > METADATA_LIMITS.keyLength) return `metadata keys may be at most ${METADATA_LIMITS.keyLength} characters`;
    if (typeof v !== 'string') return 'metadata values must be strings';
    if (v.length > METADATA_LIMITS.valueLength) return `metadata values may be at most ${METADATA_LIMITS.valueLength} characters`;
    // Kept as plain jsonb (exports filter on it), which refuses these.
    if (!isStorableText(key) || !isStorableText(v)) return 'metadata keys and values may not hold NUL characters or unpaired surrogates';
  }
  return null;
}

/** A `metadata` field, within OpenAI's limits; the message says which one it breaks. */
export function IsMetadata(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isMetadata',
      validator: {
        validate: (value: unknown) => metadataProblem(value) === null,
        defaultMessage: (args?: ValidationArguments) => metadataProblem(args?.value) ?? 'metadata must be an object of string values',
      },
    },
    options,
  );
}
