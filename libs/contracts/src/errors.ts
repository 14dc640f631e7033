/**
 * The only errors that cross the wire. Services throw ServiceError with one of these codes;
 * the gateway alone turns a code into an HTTP status and an envelope.
 */
export const ErrorCode = {
  InvalidRequest: 'invalid_request',
  /** The prompt leaves no room for a reply in the model's context window (OpenAI's code). */
  ContextLengthExceeded: 'context_length_exceeded',
  ValidationFailed: 'validation_failed',
  Unauthorized: 'unauthorized',
  Forbidden: 'forbidden',
  NotFound: 'not_found',
  ModelNotFound: 'model_not_found',
  Conflict: 'conflict',
  PayloadTooLarge: 'payload_too_large',
  RateLimited: 'rate_limited',
  Unavailable: 'unavailable',
  Timeout: 'timeout',
  Internal: 'internal',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const KNOWN_CODES = new Set<string>(Object.values(ErrorCode));

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}

/** One entry of a 422 `detail` list, in the FastAPI shape the clients already parse. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export interface ServiceErrorDetails {
  /** For validation_failed: every problem found, not just the first. */
  issues?: ValidationIssue[];
  /** For rate_limited and unavailable: seconds the client should wait. */
  retryAfterSeconds?: number;
  /** The request field the error is about (OpenAI's `param`). */
  param?: string;
}

/** The plain-JSON form of a ServiceError, as it travels inside an RPC error reply. */
export interface WireError {
  code: ErrorCode;
  message: string;
  details?: ServiceErrorDetails;
}

/** Validation problems reported per error; the rest are counted. */
export const MAX_REPORTED_ISSUES = 50;
const MAX_ISSUE_TEXT = 500;

function clip(text: string): string {
  return text.length > MAX_ISSUE_TEXT ? `${text.slice(0, MAX_ISSUE_TEXT)}...` : text;
}

function boundedIssue(issue: ValidationIssue): ValidationIssue {
  return { loc: issue.loc.map((part) => (typeof part === 'string' ? clip(part) : part)), msg: clip(issue.msg), type: issue.type };
}

export class ServiceError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ServiceErrorDetails = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  toWire(): WireError {
    return { code: this.code, message: this.message, details: this.details };
  }

  static fromWire(value: unknown): ServiceError | undefined {
    if (typeof value !== 'object' || value === null) return undefined;
    const { code, message, details } = value as Partial<WireError>;
    if (!isErrorCode(code) || typeof message !== 'string') return undefined;
    return new ServiceError(code, message, details ?? {});
  }

  static notFound(message: string): ServiceError {
    return new ServiceError(ErrorCode.NotFound, message);
  }

  static conflict(message: string): ServiceError {
    return new ServiceError(ErrorCode.Conflict, message);
  }

  static invalid(message: string, param?: string): ServiceError {
    return new ServiceError(ErrorCode.InvalidRequest, message, param ? { param } : {});
  }

  /**
   * A prompt of `promptTokens` tokens, in a model whose context window holds `contextWindow`,
   * leaves no room for a single token of reply: OpenAI's context_length_exceeded, in its words.
   */
  static contextLengthExceeded(contextWindow: number, promptTokens: number, withTools: boolean): ServiceError {
    return new ServiceError(
      ErrorCode.ContextLengthExceeded,
      `This model's maximum context length is ${contextWindow} tokens, but the messages${withTools ? ' and tools' : ''} resulted in ${promptTokens} tokens, ` +
        'leaving no room for a reply. Please reduce the length of the messages.',
      { param: 'messages' },
    );
  }

  /**
   * Every problem of a request, up to MAX_REPORTED_ISSUES of them, each cut to a readable
   * length: a hostile body can have a million bad items or a megabyte key, and the error must
   * still fit in one NATS message and one screen.
   */
  static validation(issues: ValidationIssue[]): ServiceError {
    const reported = issues.slice(0, MAX_REPORTED_ISSUES).map(boundedIssue);
    const more = issues.length - reported.length;
    const summary = reported.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; ') + (more > 0 ? `; and ${more} more problems` : '');
    return new ServiceError(ErrorCode.ValidationFailed, summary, { issues: reported });
  }
}
