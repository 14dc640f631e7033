import { loadConfig } from '@trainyard/runtime';
import { OrchestratorConfig } from './orchestrator.config';

const DATABASE_URL = 'postgresql://u:p@localhost:5432/db';

describe('OrchestratorConfig', () => {
  it('reads the allow list as trimmed entries and defaults W&B to the cloud without a key', () => {
    const config = loadConfig(OrchestratorConfig, { DATABASE_URL, SFT_DATA_ALLOWED_HOSTS: ' minio.data.svc , *.corp.example,10.20.0.0/16, fd00::1 ' });
    expect(config.SFT_DATA_ALLOWED_HOSTS).toEqual(['minio.data.svc', '*.corp.example', '10.20.0.0/16', 'fd00::1']);
    expect(config.WANDB_BASE_URL).toBe('https://api.wandb.ai');
    expect(config.WANDB_API_KEY).toBe('');
    expect(loadConfig(OrchestratorConfig, { DATABASE_URL }).SFT_DATA_ALLOWED_HOSTS).toEqual([]);
  });

  it('refuses at start-up an allow-list entry that is no host, address or range, and a W&B URL that is not http(s)', () => {
    expect(() => loadConfig(OrchestratorConfig, { DATABASE_URL, SFT_DATA_ALLOWED_HOSTS: 'minio,10.0.0.0/40' })).toThrow(/SFT_DATA_ALLOWED_HOSTS.*"10\.0\.0\.0\/40" has a prefix length/);
    expect(() => loadConfig(OrchestratorConfig, { DATABASE_URL, SFT_DATA_ALLOWED_HOSTS: 'http://minio:9000' })).toThrow(/SFT_DATA_ALLOWED_HOSTS/);
    expect(() => loadConfig(OrchestratorConfig, { DATABASE_URL, WANDB_BASE_URL: 'wandb.internal' })).toThrow(/WANDB_BASE_URL/);
  });
});
