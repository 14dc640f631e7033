import { servingName } from '@trainyard/contracts';
import { parseModelName } from './model-name';

describe('parseModelName', () => {
  it.each([
    ['wandb-artifact:///acme/agents/bot', 'latest'],
    ['wandb-artifact:///acme/agents/bot:latest', 'latest'],
    ['acme/agents/bot', 'latest'],
  ])('reads %s as the newest checkpoint', (name) => {
    expect(parseModelName(name)).toEqual({ kind: 'trained', entity: 'acme', project: 'agents', name: 'bot', selector: { kind: 'latest' } });
  });

  it.each([
    ['wandb-artifact:///acme/agents/bot:step7', 7],
    ['wandb-artifact:///acme/agents/bot:v3', 3],
    ['acme/agents/bot:step0', 0],
  ])('reads %s as step %i', (name, step) => {
    expect(parseModelName(name)).toMatchObject({ kind: 'trained', name: 'bot', selector: { kind: 'step', step } });
  });

  it.each(['trainyard/tiny-chat', 'flat-model', 'HuggingFaceTB/SmolLM2-135M-Instruct'])('reads %s as a base model id', (name) => {
    expect(parseModelName(name)).toEqual({ kind: 'base', id: name });
  });

  it.each([
    'wandb-artifact:///acme/bot',
    'wandb-artifact:///acme/agents/bot:stepX',
    'wandb-artifact:///acme/agents/bot:step1:step2',
    'acme//bot',
    'wandb-artifact:///a/b/c/d',
  ])('refuses %s', (name) => {
    expect(parseModelName(name)).toBeUndefined();
  });

  it('reads back the serving names the contracts write', () => {
    const model = { entity: 'acme', project: 'agents', name: 'bot' };
    expect(parseModelName(servingName(model))).toEqual({ kind: 'trained', ...model, selector: { kind: 'latest' } });
    expect(parseModelName(servingName(model, 5))).toEqual({ kind: 'trained', ...model, selector: { kind: 'step', step: 5 } });
  });
});
