import { autoEpochs, BASE_LEARNING_RATE, resolveHyperparameters, sftSettings } from './hyperparameters';

describe('autoEpochs', () => {
  it('is 3 for a file of ordinary size', () => {
    expect(autoEpochs(34)).toBe(3);
    expect(autoEpochs(8_333)).toBe(3);
  });

  it('sees about 100 examples of a small file, at most 25 passes', () => {
    expect(autoEpochs(10)).toBe(10);
    expect(autoEpochs(33)).toBe(3);
    expect(autoEpochs(2)).toBe(25);
  });

  it('sees about 25,000 examples of a large file, at least one pass', () => {
    expect(autoEpochs(10_000)).toBe(2);
    expect(autoEpochs(100_000)).toBe(1);
  });
});

describe('resolveHyperparameters', () => {
  it('resolves "auto" and absent values against the file', () => {
    expect(resolveHyperparameters({}, 20)).toEqual({ n_epochs: 5, batch_size: 8, learning_rate_multiplier: 1 });
    expect(resolveHyperparameters({ n_epochs: 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto' }, 3)).toEqual({ n_epochs: 25, batch_size: 3, learning_rate_multiplier: 1 });
  });

  it('keeps the values given', () => {
    expect(resolveHyperparameters({ n_epochs: 2, batch_size: 16, learning_rate_multiplier: 0.1 }, 3)).toEqual({ n_epochs: 2, batch_size: 16, learning_rate_multiplier: 0.1 });
  });
});

describe('sftSettings', () => {
  it('scales the engine’s default learning rate by the multiplier', () => {
    expect(sftSettings({ n_epochs: 1, batch_size: 4, learning_rate_multiplier: 2 })).toEqual({ batchSize: 4, learningRate: 2 * BASE_LEARNING_RATE, assistantTurns: 'all' });
    expect(BASE_LEARNING_RATE).toBeGreaterThan(0);
  });
});
