import { ConfigError, validateExperimentalConfig, validateSftConfig } from '@trainyard/art';
import type { TrainingConversation, TrainingJobPayload, TrainingJobType, TrainingTrajectoryGroup } from '@trainyard/contracts';

/**
 * A payload stored before version 2: the request's experimental_config (RL) or config (SFT)
 * as sent, which the worker validated itself. A job stored then and still queued is claimed
 * with its payload resolved as a new job's is (workPayload).
 */
export interface LegacyJobPayload {
  version?: undefined;
  model_name: string;
  entity_name: string;
  groups?: TrainingTrajectoryGroup[];
  conversations?: TrainingConversation[];
  experimental_config: Record<string, unknown> | null;
  config?: Record<string, unknown> | null;
}

/** What the payload column holds. */
export type StoredJobPayload = TrainingJobPayload | LegacyJobPayload;

/** A payload whose config does not validate: the job cannot run. */
export class UnrunnablePayloadError extends Error {}

/**
 * The payload a worker is handed: a version 2 or 3 one as stored; a legacy one validated and
 * resolved by the rules a new job's config passes at creation (it passed them once, so it
 * fails only where they have changed since: then UnrunnablePayloadError names the key).
 */
export function workPayload(type: TrainingJobType, stored: StoredJobPayload): TrainingJobPayload {
  if (stored.version !== undefined) return stored;
  const base = { version: 2, model_name: stored.model_name, entity_name: stored.entity_name } as const;
  if (type === 'rl') {
    const { config, errors } = validateExperimentalConfig(stored.experimental_config);
    refuse('experimental_config', errors);
    return { ...base, type, groups: stored.groups ?? [], settings: config.settings, kl_reference: config.klReference };
  }
  const { config, errors } = validateSftConfig(stored.config);
  refuse('config', errors);
  return { ...base, type, conversations: stored.conversations ?? [], settings: config };
}

function refuse(object: string, errors: ConfigError[]): void {
  if (errors.length > 0) throw new UnrunnablePayloadError(errors.map((e) => `${object}.${e.key} ${e.message}`).join('; '));
}
