import { loadConfig } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './training-worker.config';

describe('TrainingWorkerConfig', () => {
  it('trains on one matmul thread unless told, and refuses a thread count that is not a whole number from 1 to 64', () => {
    expect(loadConfig(TrainingWorkerConfig, {}).MATMUL_THREADS).toBe(1);
    expect(loadConfig(TrainingWorkerConfig, { MATMUL_THREADS: '2' }).MATMUL_THREADS).toBe(2);
    expect(() => loadConfig(TrainingWorkerConfig, { MATMUL_THREADS: '0' })).toThrow(/MATMUL_THREADS/);
    expect(() => loadConfig(TrainingWorkerConfig, { MATMUL_THREADS: '65' })).toThrow(/MATMUL_THREADS/);
    expect(() => loadConfig(TrainingWorkerConfig, { MATMUL_THREADS: 'all' })).toThrow(/MATMUL_THREADS/);
  });

  it('keeps up to 1536 MiB of a step\'s products for the recompute unless told, and refuses a negative or fractional size', () => {
    expect(loadConfig(TrainingWorkerConfig, {}).KEPT_PRODUCTS_MB).toBe(1536);
    expect(loadConfig(TrainingWorkerConfig, { KEPT_PRODUCTS_MB: '0' }).KEPT_PRODUCTS_MB).toBe(0);
    expect(() => loadConfig(TrainingWorkerConfig, { KEPT_PRODUCTS_MB: '-1' })).toThrow(/KEPT_PRODUCTS_MB/);
    expect(() => loadConfig(TrainingWorkerConfig, { KEPT_PRODUCTS_MB: '1.5' })).toThrow(/KEPT_PRODUCTS_MB/);
  });
});
