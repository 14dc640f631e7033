import { BaseServiceConfig, WorkerConfig } from './base-service.config';
import { ConfigError, loadConfig } from './load-config';

class TestConfig extends BaseServiceConfig {
  override HTTP_PORT = 1234;
}

describe('loadConfig', () => {
  it('applies defaults and converts types from strings', () => {
    const config = loadConfig(TestConfig, { HTTP_PORT: '4000', RPC_TIMEOUT_MS: '250' });
    expect(config.HTTP_PORT).toBe(4000);
    expect(config.RPC_TIMEOUT_MS).toBe(250);
    expect(config.NATS_URL).toEqual(['nats://127.0.0.1:4222']);
    expect(config.LOG_LEVEL).toBe('log');
  });

  it('splits a comma-separated NATS_URL into servers', () => {
    const config = loadConfig(TestConfig, { NATS_URL: 'nats://a:4222, nats://b:4222' });
    expect(config.NATS_URL).toEqual(['nats://a:4222', 'nats://b:4222']);
  });

  it('names every bad variable at once, with the value it got', () => {
    let error: unknown;
    try {
      loadConfig(TestConfig, { NATS_URL: 'http://wrong', HTTP_PORT: 'eighty', LOG_LEVEL: 'loud' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain('NATS_URL');
    expect(message).toContain('"http://wrong"');
    expect(message).toContain('HTTP_PORT');
    expect(message).toContain('LOG_LEVEL');
    expect((error as ConfigError).problems).toHaveLength(3);
  });

  it('rejects an unknown compute backend for workers', () => {
    class W extends WorkerConfig {
      override HTTP_PORT = 1;
    }
    expect(() => loadConfig(W, { COMPUTE_BACKEND: 'cuda' })).toThrow(/COMPUTE_BACKEND/);
    expect(loadConfig(W, { COMPUTE_BACKEND: 'wasm' }).COMPUTE_BACKEND).toBe('wasm');
    expect(loadConfig(W, { COMPUTE_BACKEND: 'webgpu' }).COMPUTE_BACKEND).toBe('webgpu');
  });

  it('takes WEBGPU_FUSED_KERNELS on (the default) or off, nothing else', () => {
    class W extends WorkerConfig {
      override HTTP_PORT = 1;
    }
    expect(loadConfig(W, {}).WEBGPU_FUSED_KERNELS).toBe('on');
    expect(loadConfig(W, { WEBGPU_FUSED_KERNELS: 'off' }).WEBGPU_FUSED_KERNELS).toBe('off');
    expect(() => loadConfig(W, { WEBGPU_FUSED_KERNELS: 'false' })).toThrow(/WEBGPU_FUSED_KERNELS/);
  });

  it('takes WEBGPU_TENSOR_CORES off (the default) or on, nothing else', () => {
    class W extends WorkerConfig {
      override HTTP_PORT = 1;
    }
    expect(loadConfig(W, {}).WEBGPU_TENSOR_CORES).toBe('off');
    expect(loadConfig(W, { WEBGPU_TENSOR_CORES: 'on' }).WEBGPU_TENSOR_CORES).toBe('on');
    expect(() => loadConfig(W, { WEBGPU_TENSOR_CORES: 'yes' })).toThrow(/WEBGPU_TENSOR_CORES/);
  });

  it('takes WEBGPU_BUFFER_POOL_MB as a whole number of megabytes, 2048 by default', () => {
    class W extends WorkerConfig {
      override HTTP_PORT = 1;
    }
    expect(loadConfig(W, {}).WEBGPU_BUFFER_POOL_MB).toBe(2048);
    expect(loadConfig(W, { WEBGPU_BUFFER_POOL_MB: '0' }).WEBGPU_BUFFER_POOL_MB).toBe(0);
    expect(() => loadConfig(W, { WEBGPU_BUFFER_POOL_MB: '-1' })).toThrow(/WEBGPU_BUFFER_POOL_MB/);
    expect(() => loadConfig(W, { WEBGPU_BUFFER_POOL_MB: '1.5' })).toThrow(/WEBGPU_BUFFER_POOL_MB/);
  });

  it('reads REQUIRE_GPU as a boolean, "false" included', () => {
    class W extends WorkerConfig {
      override HTTP_PORT = 1;
    }
    expect(loadConfig(W, {}).REQUIRE_GPU).toBe(false);
    expect(loadConfig(W, { REQUIRE_GPU: 'true' }).REQUIRE_GPU).toBe(true);
    expect(loadConfig(W, { REQUIRE_GPU: 'false' }).REQUIRE_GPU).toBe(false);
  });

  it('wants the shutdown drain to end before the hard bound', () => {
    const config = loadConfig(TestConfig, {});
    expect(config.SHUTDOWN_DRAIN_MS).toBeLessThan(config.SHUTDOWN_TIMEOUT_MS);
    expect(loadConfig(TestConfig, { SHUTDOWN_DRAIN_MS: '1000', SHUTDOWN_TIMEOUT_MS: '5000' }).SHUTDOWN_DRAIN_MS).toBe(1000);
    expect(() => loadConfig(TestConfig, { SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_TIMEOUT_MS: '5000' })).toThrow(/SHUTDOWN_DRAIN_MS: must be less than SHUTDOWN_TIMEOUT_MS/);
  });
});
