import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type ConfigClass<T> = new () => T;

/**
 * Reads the environment once, at boot, into a validated config object. Every problem is
 * reported at once, each naming its variable; nothing else in an app reads process.env.
 */
export function loadConfig<T extends object>(cls: ConfigClass<T>, env: NodeJS.ProcessEnv = process.env): T {
  const config = plainToInstance(cls, env, { enableImplicitConversion: true, exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: false, forbidUnknownValues: true, skipMissingProperties: false });
  if (errors.length > 0) throw new ConfigError(errors.map((e) => describe(e, env)));
  return config;
}

function describe(error: ValidationError, env: NodeJS.ProcessEnv): string {
  const reasons = Object.values(error.constraints ?? {}).join(', ');
  const given = env[error.property];
  return `${error.property}: ${reasons}${given === undefined ? ' (not set)' : ` (got ${JSON.stringify(given)})`}`;
}
