import { validateExperimentalConfig, validateSftConfig, validateSftExperimentalConfig } from './experimental-config';

describe('validateExperimentalConfig', () => {
  it('applies the documented defaults', () => {
    const { config, errors } = validateExperimentalConfig(null);
    expect(errors).toEqual([]);
    expect(config.settings).toMatchObject({ learningRate: 5e-6, lossFn: 'cispo', epsilon: 1, epsilonHigh: 4, importanceSamplingLevel: 'token', scaleRewards: true, klPenaltyCoef: 0 });
    expect(config.klReference).toBeNull();
    expect(validateExperimentalConfig({ loss_fn: 'ppo' }).config.settings).toMatchObject({ lossFn: 'ppo', epsilon: 0.2, epsilonHigh: 0.2 });
    expect(validateExperimentalConfig({ loss_fn: 'ppo', epsilon: 0.3 }).config.settings).toMatchObject({ epsilon: 0.3, epsilonHigh: 0.3 });
    expect(validateExperimentalConfig({ normalize_advantages: false }).config.settings.scaleRewards).toBe(false);
  });

  it('takes the legacy ppo switch as loss_fn "ppo", and refuses it contradicting loss_fn', () => {
    expect(validateExperimentalConfig({ ppo: true }).config.settings).toEqual(validateExperimentalConfig({ loss_fn: 'ppo' }).config.settings);
    expect(validateExperimentalConfig({ ppo: true, loss_fn: 'cispo' }).errors).toEqual([{ key: 'ppo', message: 'contradicts loss_fn "cispo"' }]);
  });

  it('resolves the KL reference: a step, a lag or a named checkpoint, one at most', () => {
    expect(validateExperimentalConfig({ kl_penalty_reference_step: 3 }).config.klReference).toEqual({ step: 3 });
    expect(validateExperimentalConfig({ kl_penalty_step_lag: 2 }).config.klReference).toEqual({ steps_back: 2 });
    const name = 'wandb-artifact:///acme/proj/agent:step1';
    expect(validateExperimentalConfig({ kl_ref_adapter_path: name }).config.klReference).toEqual({ model: name });
    expect(validateExperimentalConfig({ kl_penalty_reference_step: 3, kl_penalty_step_lag: 2 }).errors.map((e) => e.key)).toEqual(['kl_penalty_reference_step']);
    expect(validateExperimentalConfig({ kl_penalty_step_lag: 1.5 }).errors.map((e) => e.key)).toEqual(['kl_penalty_step_lag']);
  });

  it('rejects unimplemented options and bad values naming the key, and lists unknown keys as ignored', () => {
    const { errors, ignored } = validateExperimentalConfig({
      not_a_key: 1,
      plot_tensors: true,
      scale_learning_rate_by_reward_std_dev: true,
      loss_fn: 'dpo',
      advantage_balance: 2,
      epsilon: 'x',
    });
    expect(errors.map((e) => e.key).sort()).toEqual(['advantage_balance', 'epsilon', 'loss_fn', 'plot_tensors', 'scale_learning_rate_by_reward_std_dev']);
    expect(ignored).toEqual(['not_a_key']);
    expect(validateExperimentalConfig({ plot_tensors: false, scale_learning_rate_by_reward_std_dev: null })).toMatchObject({ errors: [], ignored: [] });
  });
});

describe('validateSftConfig', () => {
  it('defaults assistant_turns to "all", accepts "last", and rejects anything else naming it', () => {
    expect(validateSftConfig(null)).toMatchObject({ config: { batchSize: 'auto', learningRate: 5e-5, assistantTurns: 'all' }, errors: [], ignored: [] });
    expect(validateSftConfig({ assistant_turns: 'last' }).config.assistantTurns).toBe('last');
    expect(validateSftConfig({ assistant_turns: null }).config.assistantTurns).toBe('all');
    for (const bad of ['first', 'LAST', 1, true, ['last']]) {
      expect(validateSftConfig({ assistant_turns: bad }).errors).toEqual([{ key: 'assistant_turns', message: expect.stringContaining('"last"') }]);
    }
  });

  it('accepts keys it does not know and lists them; known keys are still checked', () => {
    const { errors, ignored } = validateSftConfig({ batch_size: 0, learning_rate: 1e-4, epochs: 3, warmup_ratio: 0.1, metric_logging: { enabled: true } });
    expect(errors.map((e) => e.key)).toEqual(['batch_size']);
    expect(ignored).toEqual(['epochs', 'warmup_ratio']);
  });
});

describe('validateSftExperimentalConfig', () => {
  it('ignores every key but those of config, which it sends back to config', () => {
    expect(validateSftExperimentalConfig(null)).toEqual({ errors: [], ignored: [] });
    expect(validateSftExperimentalConfig({ future_knob: 1, packing: true })).toEqual({ errors: [], ignored: ['future_knob', 'packing'] });
    expect(validateSftExperimentalConfig({ learning_rate: 1e-4, future_knob: 1 })).toEqual({
      errors: [{ key: 'learning_rate', message: expect.stringContaining('config') }],
      ignored: ['future_knob'],
    });
    expect(validateSftExperimentalConfig([1]).errors[0].key).toBe('experimental_config');
  });
});
