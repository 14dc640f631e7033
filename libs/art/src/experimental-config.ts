import type { TrainingKlReference, TrainingRlSettings, TrainingSftSettings } from '@trainyard/contracts';

/**
 * experimental_config of an RL training job (api.md), validated once, before the job is
 * queued, and resolved into what the job's payload carries: the trainer's settings and the
 * KL penalty's reference. A known key is either implemented (and mapped below) or rejected
 * naming the key; a key this service does not know (a newer client's) is accepted and
 * returned in `ignored`, so the job record and its training_started event can show it. null
 * means "default" for every key.
 */
export interface RlJobConfig {
  settings: TrainingRlSettings;
  /**
   * kl_penalty_reference_step, kl_penalty_step_lag or kl_ref_adapter_path; null when none is
   * set (the reference is the base model). kl_ref_adapter_path, despite its name, is a
   * checkpoint of one of the caller's own models
   * (`wandb-artifact:///{entity}/{project}/{name}:step{N}`), resolved through the registry
   * with the caller's scope; never read as a filesystem path.
   */
  klReference: TrainingKlReference | null;
}

export interface ConfigError {
  key: string;
  message: string;
}

/** Token budget per gradient step when packed_sequence_length is not given. */
export const DEFAULT_PACKED_SEQUENCE_LENGTH = 2048;

export const RL_CONFIG_KEYS = [
  'learning_rate',
  'loss_fn',
  'ppo',
  'epsilon',
  'epsilon_high',
  'importance_sampling_level',
  'mask_prob_ratio',
  'max_negative_advantage_importance_sampling_weight',
  'kimi_k2_tau',
  'scale_rewards',
  'normalize_advantages',
  'advantage_balance',
  'precalculate_logprobs',
  'allow_training_without_logprobs',
  'kl_penalty_coef',
  'kl_penalty_source',
  'kl_penalty_reference_step',
  'kl_penalty_step_lag',
  'kl_ref_adapter_path',
  'truncated_importance_sampling',
  'packed_sequence_length',
  'logprob_calculation_chunk_size',
  'num_trajectories_learning_rate_multiplier_power',
  'scale_learning_rate_by_reward_std_dev',
  'plot_tensors',
] as const;

/** Known keys this service does not implement, and why; a non-default value is rejected. */
const UNIMPLEMENTED: Record<string, string> = {
  scale_learning_rate_by_reward_std_dev: 'is not implemented (only false is accepted)',
  plot_tensors: 'is not implemented: there is no tensor plotting here (only false is accepted)',
};

export function validateExperimentalConfig(raw: unknown): { config: RlJobConfig; errors: ConfigError[]; ignored: string[] } {
  const errors: ConfigError[] = [];
  const obj = raw === null || raw === undefined ? {} : raw;
  if (typeof obj !== 'object' || Array.isArray(obj)) {
    errors.push({ key: 'experimental_config', message: 'must be an object or null' });
  }
  const o = (typeof obj === 'object' && !Array.isArray(obj) ? obj : {}) as Record<string, unknown>;
  const ignored = unknownKeys(o, RL_CONFIG_KEYS);
  const present = (key: string) => o[key] !== null && o[key] !== undefined;
  const num = (key: string, fallback: number, check?: (v: number) => string | null): number => {
    if (!present(key)) return fallback;
    const v = o[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      errors.push({ key, message: 'must be a finite number' });
      return fallback;
    }
    const problem = check?.(v);
    if (problem) errors.push({ key, message: problem });
    return v;
  };
  const optNum = (key: string, check?: (v: number) => string | null): number | null => (present(key) ? num(key, 0, check) : null);
  const bool = (key: string, fallback: boolean): boolean => {
    if (!present(key)) return fallback;
    if (typeof o[key] !== 'boolean') {
      errors.push({ key, message: 'must be a boolean' });
      return fallback;
    }
    return o[key] as boolean;
  };
  const oneOf = <T extends string>(key: string, values: readonly T[], fallback: T): T => {
    if (!present(key)) return fallback;
    if (!values.includes(o[key] as T)) {
      errors.push({ key, message: `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}` });
      return fallback;
    }
    return o[key] as T;
  };
  const positive = (v: number) => (v > 0 ? null : 'must be greater than 0');
  const nonNegative = (v: number) => (v >= 0 ? null : 'must be at least 0');
  const positiveInt = (v: number) => (Number.isInteger(v) && v >= 1 ? null : 'must be an integer of at least 1');
  const nonNegativeInt = (v: number) => (Number.isInteger(v) && v >= 0 ? null : 'must be an integer of at least 0');

  for (const [key, why] of Object.entries(UNIMPLEMENTED)) {
    if (present(key) && o[key] !== false) errors.push({ key, message: why });
  }

  const lossFromKey = oneOf('loss_fn', ['cispo', 'ppo'] as const, 'cispo');
  const legacyPpo = bool('ppo', false);
  if (present('loss_fn') && present('ppo') && legacyPpo !== (lossFromKey === 'ppo')) {
    errors.push({ key: 'ppo', message: `contradicts loss_fn "${lossFromKey}"` });
  }
  const lossFn = legacyPpo ? 'ppo' : lossFromKey;
  const epsilon = num('epsilon', lossFn === 'ppo' ? 0.2 : 1.0, nonNegative);
  const epsilonHigh = num('epsilon_high', lossFn === 'ppo' ? epsilon : 4.0, nonNegative);

  const scaleRewards = bool('scale_rewards', true);
  const normalize = bool('normalize_advantages', scaleRewards);
  if (present('scale_rewards') && present('normalize_advantages') && scaleRewards !== normalize) {
    errors.push({ key: 'normalize_advantages', message: 'is an alias of scale_rewards and contradicts it' });
  }

  const klPenaltyReferenceStep = optNum('kl_penalty_reference_step', nonNegativeInt);
  const klPenaltyStepLag = optNum('kl_penalty_step_lag', nonNegativeInt);
  let klRefAdapterPath: string | null = null;
  if (present('kl_ref_adapter_path')) {
    if (typeof o['kl_ref_adapter_path'] !== 'string' || !o['kl_ref_adapter_path']) errors.push({ key: 'kl_ref_adapter_path', message: 'must be a non-empty string' });
    else klRefAdapterPath = o['kl_ref_adapter_path'] as string;
  }
  const references = [klPenaltyReferenceStep !== null, klPenaltyStepLag !== null, klRefAdapterPath !== null].filter(Boolean).length;
  if (references > 1) {
    errors.push({ key: 'kl_penalty_reference_step', message: 'kl_penalty_reference_step, kl_penalty_step_lag and kl_ref_adapter_path are mutually exclusive' });
  }

  const settings: TrainingRlSettings = {
    learningRate: num('learning_rate', 5e-6, positive),
    lossFn,
    epsilon,
    epsilonHigh,
    importanceSamplingLevel: oneOf('importance_sampling_level', ['token', 'sequence', 'average', 'geometric_average'] as const, 'token'),
    maskProbRatio: bool('mask_prob_ratio', false),
    maxNegativeAdvantageImportanceSamplingWeight: optNum('max_negative_advantage_importance_sampling_weight', positive),
    kimiK2Tau: optNum('kimi_k2_tau'),
    scaleRewards: normalize,
    advantageBalance: num('advantage_balance', 0, (v) => (v >= -1 && v <= 1 ? null : 'must be between -1 and 1')),
    precalculateLogprobs: bool('precalculate_logprobs', false),
    allowTrainingWithoutLogprobs: bool('allow_training_without_logprobs', false),
    klPenaltyCoef: num('kl_penalty_coef', 0, nonNegative),
    klPenaltySource: oneOf('kl_penalty_source', ['current_learner', 'sample'] as const, 'current_learner'),
    truncatedImportanceSampling: optNum('truncated_importance_sampling', positive),
    packedSequenceLength: num('packed_sequence_length', DEFAULT_PACKED_SEQUENCE_LENGTH, positiveInt),
    logprobCalculationChunkSize: num('logprob_calculation_chunk_size', 1024, positiveInt),
    numTrajectoriesLearningRateMultiplierPower: num('num_trajectories_learning_rate_multiplier_power', 0),
  };
  const klReference: TrainingKlReference | null =
    klPenaltyReferenceStep !== null
      ? { step: klPenaltyReferenceStep }
      : klPenaltyStepLag !== null
        ? { steps_back: klPenaltyStepLag }
        : klRefAdapterPath !== null
          ? { model: klRefAdapterPath }
          : null;
  return { config: { settings, klReference }, errors, ignored };
}

/** Keys of `o` outside `known`, in the order they came. */
function unknownKeys(o: Record<string, unknown>, known: readonly string[]): string[] {
  return Object.keys(o).filter((key) => !known.includes(key));
}

export const SFT_CONFIG_KEYS = ['batch_size', 'learning_rate', 'metric_logging', 'assistant_turns'] as const;

/**
 * The SFT job's `config` (api.md: batch_size, learning_rate, one per batch when a list, and
 * assistant_turns) as the payload's settings, by the same policy as experimental_config:
 * known keys are implemented or rejected naming the key, unknown keys are accepted and
 * returned in `ignored`.
 */
export function validateSftConfig(raw: unknown): { config: TrainingSftSettings; errors: ConfigError[]; ignored: string[] } {
  const errors: ConfigError[] = [];
  const o = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  if (raw !== null && raw !== undefined && (typeof raw !== 'object' || Array.isArray(raw))) errors.push({ key: 'config', message: 'must be an object or null' });
  const ignored = unknownKeys(o, SFT_CONFIG_KEYS);
  let batchSize: number | 'auto' = 'auto';
  const bs = o['batch_size'];
  if (bs !== null && bs !== undefined && bs !== 'auto') {
    if (typeof bs === 'number' && Number.isInteger(bs) && bs >= 1) batchSize = bs;
    else errors.push({ key: 'batch_size', message: 'must be an integer of at least 1, "auto" or null' });
  }
  let learningRate: number | number[] = 5e-5;
  const lr = o['learning_rate'];
  if (lr !== null && lr !== undefined) {
    const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
    if (ok(lr)) learningRate = lr as number;
    else if (Array.isArray(lr) && lr.length > 0 && lr.every(ok)) learningRate = lr as number[];
    else errors.push({ key: 'learning_rate', message: 'must be a positive number or a non-empty list of them (one per batch)' });
  }
  let assistantTurns: TrainingSftSettings['assistantTurns'] = 'all';
  const turns = o['assistant_turns'];
  if (turns !== null && turns !== undefined) {
    if (turns === 'all' || turns === 'last') assistantTurns = turns;
    else errors.push({ key: 'assistant_turns', message: 'must be "all", "last" or null' });
  }
  return { config: { batchSize, learningRate, assistantTurns }, errors, ignored };
}

/**
 * experimental_config of an SFT job. No experimental key changes SFT here, so every key is
 * ignored (and listed), except the keys of `config`: one of those sent here is a mistake
 * that would silently change nothing, so it is rejected pointing at `config`.
 */
export function validateSftExperimentalConfig(raw: unknown): { errors: ConfigError[]; ignored: string[] } {
  if (raw === null || raw === undefined) return { errors: [], ignored: [] };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { errors: [{ key: 'experimental_config', message: 'must be an object or null' }], ignored: [] };
  const keys = Object.keys(raw);
  const misplaced = keys.filter((key) => (SFT_CONFIG_KEYS as readonly string[]).includes(key));
  return {
    errors: misplaced.map((key) => ({ key, message: 'is an SFT config key: send it in config' })),
    ignored: keys.filter((key) => !misplaced.includes(key)),
  };
}
