import { ConfigError, loadConfig } from '@trainyard/runtime';
import { InferenceWorkerConfig } from './inference-worker.config';

describe('InferenceWorkerConfig', () => {
  it('lets the engine choose read-ahead unless told', () => {
    expect(loadConfig(InferenceWorkerConfig, {}).MATMUL_READ_AHEAD).toBe('auto');
    expect(loadConfig(InferenceWorkerConfig, { MATMUL_READ_AHEAD: 'off' }).MATMUL_READ_AHEAD).toBe('off');
  });

  it('refuses a read-ahead setting other than auto, on or off, naming it', () => {
    expect(() => loadConfig(InferenceWorkerConfig, { MATMUL_READ_AHEAD: 'yes' })).toThrow(ConfigError);
    expect(() => loadConfig(InferenceWorkerConfig, { MATMUL_READ_AHEAD: 'yes' })).toThrow(/MATMUL_READ_AHEAD.*"yes"/s);
  });

  it('lets the engine choose the one-row tile unless told, and refuses any other value, naming it', () => {
    expect(loadConfig(InferenceWorkerConfig, {}).MATMUL_ONE_ROW_TILE).toBe('auto');
    expect(loadConfig(InferenceWorkerConfig, { MATMUL_ONE_ROW_TILE: 'narrow' }).MATMUL_ONE_ROW_TILE).toBe('narrow');
    expect(loadConfig(InferenceWorkerConfig, { MATMUL_ONE_ROW_TILE: 'paired' }).MATMUL_ONE_ROW_TILE).toBe('paired');
    expect(() => loadConfig(InferenceWorkerConfig, { MATMUL_ONE_ROW_TILE: 'wider' })).toThrow(/MATMUL_ONE_ROW_TILE.*"wider"/s);
  });

  it('runs the matmul on one thread unless told, and refuses a thread count that is not a whole number from 1 to 64', () => {
    expect(loadConfig(InferenceWorkerConfig, {}).MATMUL_THREADS).toBe(1);
    expect(loadConfig(InferenceWorkerConfig, { MATMUL_THREADS: '2' }).MATMUL_THREADS).toBe(2);
    expect(() => loadConfig(InferenceWorkerConfig, { MATMUL_THREADS: '0' })).toThrow(/MATMUL_THREADS/);
    expect(() => loadConfig(InferenceWorkerConfig, { MATMUL_THREADS: 'all' })).toThrow(/MATMUL_THREADS/);
  });

  it('holds weights as the checkpoint stores them unless told q8, and refuses any other value, naming it', () => {
    expect(loadConfig(InferenceWorkerConfig, {}).WEIGHTS).toBe('checkpoint');
    expect(loadConfig(InferenceWorkerConfig, { WEIGHTS: 'q8' }).WEIGHTS).toBe('q8');
    expect(() => loadConfig(InferenceWorkerConfig, { WEIGHTS: 'int8' })).toThrow(/WEIGHTS.*"int8"/s);
  });
});
