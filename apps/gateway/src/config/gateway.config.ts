import { Type } from 'class-transformer';
import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { IsInt, Matches, Max, Min } from 'class-validator';

export class GatewayConfig extends BaseServiceConfig {
  override HTTP_PORT = 8080;

  /** API keys and idempotency records live here. */
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /** Path in front of /v1, e.g. /api/training; empty serves /v1 at the root. */
  @Matches(/^(\/[A-Za-z0-9._~-]+)*$/, { message: 'must be empty or a path like /api/training (no trailing slash)' })
  API_PREFIX = '';

  /** Largest request body accepted; trajectory groups can be large. */
  @IsInt()
  @Min(1024)
  @Max(1024 * 1024 * 1024)
  @Type(() => Number)
  MAX_BODY_BYTES = 32 * 1024 * 1024;

  /** Largest file accepted by POST /v1/files; a larger upload is refused with 413. */
  @IsInt()
  @Min(1)
  @Max(8 * 1024 * 1024 * 1024)
  @Type(() => Number)
  MAX_UPLOAD_BYTES = 100 * 1024 * 1024;

  /** Deadline for the whole system check, as the gateway waits for the health service. */
  @IsInt()
  @Min(200)
  @Type(() => Number)
  SYSTEM_CHECK_TIMEOUT_MS = 5_000;

  /** max_tokens when a chat request gives none. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  DEFAULT_MAX_TOKENS = 512;

  /** Largest max_tokens a chat request may ask for. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MAX_COMPLETION_TOKENS = 4096;

  /** Largest n (choices per request). */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MAX_CHOICES = 8;

  /** A completion whose worker sends nothing for this long fails with 504. */
  @Type(() => Number)
  @IsInt()
  @Min(100)
  COMPLETION_IDLE_TIMEOUT_MS = 60_000;
}
