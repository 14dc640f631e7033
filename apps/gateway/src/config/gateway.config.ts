import { Type } from 'class-transformer';
import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { IsIn, IsInt, IsString, Matches, Max, Min } from 'class-validator';

/** The Secure flag of the console's session cookie (CONSOLE_COOKIE_SECURE). */
export type CookieSecurity = 'auto' | 'always' | 'never';

export class GatewayConfig extends BaseServiceConfig {
  override HTTP_PORT = 8080;

  /** API keys and idempotency records live here. */
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /** Path in front of /v1, e.g. /api/training; empty serves /v1 at the root. */
  @Matches(/^(\/[A-Za-z0-9._~-]+)*$/, { message: 'must be empty or a path like /api/training (no trailing slash)' })
  API_PREFIX = '';

  /**
   * Origins whose browser scripts may call the API (CORS): a comma-separated list such as
   * `https://app.example.com,http://localhost:5173`, or `*` for any. Empty: none.
   */
  @Matches(/^(\*|https?:\/\/[^\s,/]+(,https?:\/\/[^\s,/]+)*)?$/, {
    message: 'must be empty, * or a comma-separated list of origins like https://app.example.com (scheme, host, optional port)',
  })
  CORS_ORIGINS = '';

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

  /**
   * After this long without an event, the gateway asks whether the worker that took the
   * completion still holds it: if it is gone, the completion fails at once with 503.
   */
  @Type(() => Number)
  @IsInt()
  @Min(50)
  COMPLETION_PROBE_AFTER_MS = 2_000;

  /** The built web console (dist/apps/console), served under /console; relative to the working directory. */
  @IsString()
  CONSOLE_DIR = 'dist/apps/console';

  /** How long a console sign-in lasts, from the moment of signing in. */
  @Type(() => Number)
  @IsInt()
  @Min(60)
  @Max(30 * 24 * 3600)
  CONSOLE_SESSION_TTL_SECONDS = 12 * 3600;

  /**
   * The Secure flag of the console's session cookie. `auto` sets it when the request came over
   * https, directly or through a proxy that says so in X-Forwarded-Proto.
   */
  @IsIn(['auto', 'always', 'never'])
  CONSOLE_COOKIE_SECURE: CookieSecurity = 'auto';

  /**
   * Requests one API key may make per KEY_RATE_LIMIT_WINDOW_MS, as a token bucket (bursts up
   * to this many, refilled evenly over the window); past it, 429 with Retry-After. 0: no limit.
   * Counted per gateway replica.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  KEY_RATE_LIMIT_REQUESTS = 3_000;

  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  KEY_RATE_LIMIT_WINDOW_MS = 60_000;

  /** Requests one API key may have in progress at once (streams included); past it, 429. 0: no limit. Per replica. */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  KEY_CONCURRENCY_LIMIT = 32;

  /**
   * How long a verified API key may be served from this replica's memory before the database
   * is asked again. Only a backstop: a key revoked, deleted or changed anywhere is dropped from
   * every replica's memory at once (PostgreSQL notifies them), and while that notification
   * channel is down every request asks the database. 0 turns the cache off.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  API_KEY_CACHE_TTL_MS = 60_000;

  /** Verified API keys one replica keeps in memory; the least recently used go first. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  API_KEY_CACHE_MAX_ENTRIES = 10_000;

  /** Requests in progress on this replica, all keys together (health probes aside); past it, 429 before any work. 0: no limit. */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  MAX_IN_FLIGHT_REQUESTS = 256;

  /** A client must send a request's headers within this time (slow-header clients hold no socket for long). */
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  HTTP_HEADERS_TIMEOUT_MS = 20_000;

  /** A client must send a whole request (body included) within this time. */
  @Type(() => Number)
  @IsInt()
  @Min(1_000)
  HTTP_REQUEST_TIMEOUT_MS = 300_000;

  /** An idle keep-alive connection is closed after this time. */
  @Type(() => Number)
  @IsInt()
  @Min(100)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 5_000;
}
