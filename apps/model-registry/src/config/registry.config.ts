import { BaseServiceConfig, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { IsString, Matches } from 'class-validator';

export class RegistryConfig extends BaseServiceConfig {
  override HTTP_PORT = 3102;

  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /** Base models: Hugging Face model directories under here, as <name>/ or <org>/<name>/. */
  @IsString()
  MODELS_DIR = 'var/models';
}
