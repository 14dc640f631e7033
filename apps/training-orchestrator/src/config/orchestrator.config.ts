import { withArtifactStore } from '@trainyard/artifacts';
import { Transform, Type } from 'class-transformer';
import { BaseServiceConfig, DATABASE_URL_PATTERN, splitList } from '@trainyard/runtime';
import { IsInt, IsString, Matches, Min, registerDecorator } from 'class-validator';
import { allowEntryProblem } from '../data/outbound-fetch';

/** The artifact store's settings (withArtifactStore): Tinker's saved states are objects there. */
export class OrchestratorConfig extends withArtifactStore(BaseServiceConfig) {
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

  /**
   * Comma-separated host names (`*.example.com` for a domain's subdomains), IP addresses and
   * CIDR ranges that the URLs fetched for callers (SFT data, W&B artifact downloads) may
   * reach although they are internal. Everything else internal (loopback, private,
   * link-local and metadata, CGNAT, unique-local IPv6) is refused.
   */
  @Transform(splitList)
  @IsAllowList()
  SFT_DATA_ALLOWED_HOSTS: string[] = [];

  /** How often the head job of every model is checked to have a message in the training queue (see StrandedJobsWatcher). */
  @IsInt()
  @Min(1_000)
  @Type(() => Number)
  STRANDED_JOBS_SCAN_MS = 30_000;

  /** W&B (cloud, or a W&B Server's address) for resolving wandb-artifact:/// training data. */
  @Matches(/^https?:\/\/[^\s]+$/, { message: 'must be an http(s) URL' })
  WANDB_BASE_URL = 'https://api.wandb.ai';

  /** The service's own W&B API key; empty: wandb-artifact:/// training data is refused, saying what to set. */
  @IsString()
  WANDB_API_KEY = '';
}

/** Every entry a host name, an IP address or a CIDR range. */
function IsAllowList(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isAllowList',
      target: target.constructor,
      propertyName: String(propertyName),
      options: {
        message: (args) => {
          const bad = (args.value as string[]).map((e) => [e, allowEntryProblem(e)]).filter(([, p]) => p);
          return bad.map(([e, p]) => `${JSON.stringify(e)} ${p}`).join('; ');
        },
      },
      validator: { validate: (value: unknown) => Array.isArray(value) && value.every((e) => typeof e === 'string' && allowEntryProblem(e) === null) },
    });
}
