import { ValidateBy, ValidationArguments, ValidationOptions } from 'class-validator';

/**
 * OpenAI message content: a string or text parts (other part types are refused by name); only
 * an assistant message may leave it out or null (it may carry tool calls instead). A prompt
 * message without content would only fail later, in the model's chat template.
 */
export function IsChatContent(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isChatContent',
      validator: {
        validate: (value: unknown, args?: ValidationArguments) =>
          ((value === null || value === undefined) && (args?.object as { role?: unknown } | undefined)?.role === 'assistant') ||
          typeof value === 'string' ||
          (Array.isArray(value) &&
            value.every((part) => typeof part === 'object' && part !== null && part.type === 'text' && typeof part.text === 'string')),
        defaultMessage: () =>
          'content must be a string or an array of {"type": "text", "text": string} parts (only text is supported); only an assistant message may have none',
      },
    },
    options,
  );
}

/** `stop`: one string or up to four. */
export function IsStopSequences(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStopSequences',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' ||
          value === null ||
          (Array.isArray(value) && value.length <= 4 && value.every((s) => typeof s === 'string')),
        defaultMessage: () => 'stop must be a string or an array of at most 4 strings',
      },
    },
    options,
  );
}

/** `tool_choice`: "none", "auto", "required" or {type: "function", function: {name}}. */
export function IsToolChoice(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isToolChoice',
      validator: {
        validate: (value: unknown) =>
          value === undefined ||
          value === null ||
          ['none', 'auto', 'required'].includes(value as string) ||
          (typeof value === 'object' &&
            (value as { type?: unknown }).type === 'function' &&
            typeof (value as { function?: { name?: unknown } }).function?.name === 'string'),
        defaultMessage: () => 'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}',
      },
    },
    options,
  );
}

/**
 * Why a function's `parameters` cannot describe its arguments, or null when it can. Arguments
 * are always a JSON object (OpenAI's rule as well), so a schema of another type would have the
 * model write arguments no client can read. A schema without `type` is accepted as it stands.
 */
export function parametersProblem(parameters: unknown): string | null {
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) return 'parameters must be a JSON schema object';
  const { type } = parameters as { type?: unknown };
  if (type === undefined || type === 'object') return null;
  return `parameters must be a JSON schema of type "object" (a function's arguments are an object), not type ${JSON.stringify(type)}`;
}

/** A function's `parameters`: an object schema (see parametersProblem). */
export function IsParametersSchema(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isParametersSchema',
      validator: {
        validate: (value: unknown) => parametersProblem(value) === null,
        defaultMessage: (args?: ValidationArguments) => parametersProblem(args?.value) ?? 'parameters must be a JSON schema object',
      },
    },
    options,
  );
}

/** Most bytes of a request's chat_template_kwargs, as JSON: template switches, not documents. */
const MAX_TEMPLATE_KWARGS_BYTES = 4096;

/**
 * `chat_template_kwargs`: variables for the model's chat template (vLLM's and SGLang's
 * extension, e.g. {"enable_thinking": false}), an object of identifiers to JSON values.
 */
export function IsTemplateKwargs(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTemplateKwargs',
      validator: {
        validate: (value: unknown) =>
          value === null ||
          value === undefined ||
          (typeof value === 'object' &&
            !Array.isArray(value) &&
            Object.keys(value).every((key) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) &&
            Buffer.byteLength(JSON.stringify(value)) <= MAX_TEMPLATE_KWARGS_BYTES),
        defaultMessage: (args?: ValidationArguments) =>
          `${args?.property ?? 'chat_template_kwargs'} must be an object of template variables (identifier keys, at most ${MAX_TEMPLATE_KWARGS_BYTES} bytes as JSON)`,
      },
    },
    options,
  );
}
