import { unpackJson, packJson } from './packed-json';

describe('packed JSON columns', () => {
  it('round-trips values jsonb would refuse (NUL characters)', () => {
    const payload = { groups: [{ trajectories: [{ messagesAndChoices: [{ role: 'user', content: 'a\u0000b' }] }] }] };
    const stored = packJson(payload);
    expect(JSON.stringify(stored)).not.toContain('\\u0000');
    expect(unpackJson(stored)).toEqual(payload);
  });

  it('passes through a payload stored without the envelope', () => {
    expect(unpackJson({ model_name: 'x' })).toEqual({ model_name: 'x' });
  });
});
