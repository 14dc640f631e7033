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
});
