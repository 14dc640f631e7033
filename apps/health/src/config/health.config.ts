import { Type } from 'class-transformer';
import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { IsInt, Matches, Max, Min } from 'class-validator';

export class HealthConfig extends BaseServiceConfig {
  override HTTP_PORT = 3104;

  /** Only pinged, never queried: the health service owns no tables. */
  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /** Deadline for each component's answer within one system check. */
  @IsInt()
  @Min(100)
  @Max(30_000)
  @Type(() => Number)
  CHECK_TIMEOUT_MS = 1_500;
}
