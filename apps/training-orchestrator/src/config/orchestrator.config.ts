import { Type } from 'class-transformer';
import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { IsInt, Matches, Min } from 'class-validator';

export class OrchestratorConfig extends BaseServiceConfig {
  override HTTP_PORT = 3103;

  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /** Largest SFT dataset (JSONL) a job may reference, from an uploaded file or a URL. */
  @IsInt()
  @Min(1)
  @Type(() => Number)
  SFT_DATA_MAX_BYTES = 50 * 1024 * 1024;

  /** How long fetching an SFT dataset from an http(s) URL may take. */
  @IsInt()
  @Min(100)
  @Type(() => Number)
  SFT_DATA_FETCH_TIMEOUT_MS = 15_000;
}
