import type { SftTrainingConfig } from '@trainyard/engine';
import { epochConfig, sftEpochs } from './sft-epochs';

const ITEMS = Array.from({ length: 20 }, (_, i) => i);

describe('sftEpochs', () => {
  it('keeps the file order in every epoch without a seed', () => {
    expect(sftEpochs(ITEMS, 3, undefined)).toEqual([ITEMS, ITEMS, ITEMS]);
  });

  it('gives each epoch a permutation of its own, the same for the same seed', () => {
    const epochs = sftEpochs(ITEMS, 3, 42);
    expect(epochs).toHaveLength(3);
    for (const epoch of epochs) expect([...epoch].sort((a, b) => a - b)).toEqual(ITEMS);
    expect(epochs[0]).not.toEqual(ITEMS);
    expect(epochs[1]).not.toEqual(epochs[0]);
    expect(sftEpochs(ITEMS, 3, 42)).toEqual(epochs);
    expect(sftEpochs(ITEMS, 3, 43)[0]).not.toEqual(epochs[0]);
  });

  it('makes at least one epoch, and an empty file empty epochs', () => {
    expect(sftEpochs(ITEMS, 0, undefined)).toEqual([ITEMS]);
    expect(sftEpochs([], 2, 1)).toEqual([[], []]);
  });
});

describe('epochConfig', () => {
  it('cuts a per-batch learning rate to the epoch and leaves a single one alone', () => {
    const perBatch: SftTrainingConfig = { batchSize: 'auto', learningRate: [1, 2, 3, 4], assistantTurns: 'all' };
    expect(epochConfig(perBatch, 2, 2).learningRate).toEqual([3, 4]);
    const single: SftTrainingConfig = { batchSize: 'auto', learningRate: 0.5, assistantTurns: 'all' };
    expect(epochConfig(single, 2, 2)).toBe(single);
  });
});
