import { loadConfig } from '@trainyard/runtime';
import { ChatConfig } from './chat.config';

const DATABASE_URL = 'postgresql://u:p@localhost:5432/db';

describe('ChatConfig', () => {
  it('keeps stored responses 30 days unless told otherwise', () => {
    expect(loadConfig(ChatConfig, { DATABASE_URL }).RESPONSE_RETENTION_DAYS).toBe(30);
    expect(loadConfig(ChatConfig, { DATABASE_URL, RESPONSE_RETENTION_DAYS: '7' }).RESPONSE_RETENTION_DAYS).toBe(7);
  });

  it('refuses at start-up a retention that is not a whole number of days from 1, and a missing database', () => {
    for (const days of ['0', '-1', '1.5', 'forever']) {
      expect(() => loadConfig(ChatConfig, { DATABASE_URL, RESPONSE_RETENTION_DAYS: days })).toThrow(/RESPONSE_RETENTION_DAYS/);
    }
    expect(() => loadConfig(ChatConfig, {})).toThrow(/DATABASE_URL/);
  });
});
