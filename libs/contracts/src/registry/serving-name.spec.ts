import { SERVING_NAME_SCHEME, servingName } from './serving-name';

describe('servingName', () => {
  it('names the newest checkpoint without a step and pins one with it', () => {
    const model = { entity: 'acme', project: 'agents', name: 'bot' };
    expect(servingName(model)).toBe('wandb-artifact:///acme/agents/bot');
    expect(servingName(model, 0)).toBe('wandb-artifact:///acme/agents/bot:step0');
    expect(servingName(model, 12)).toBe('wandb-artifact:///acme/agents/bot:step12');
    expect(servingName(model).startsWith(SERVING_NAME_SCHEME)).toBe(true);
  });
});
