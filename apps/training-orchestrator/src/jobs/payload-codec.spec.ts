import { decodePayload, encodePayload } from './payload-codec';

describe('job payload codec', () => {
  it('round-trips values jsonb would refuse (NUL characters)', () => {
    const payload = { groups: [{ trajectories: [{ messagesAndChoices: [{ role: 'user', content: 'a\u0000b' }] }] }] };
    const stored = encodePayload(payload);
    expect(JSON.stringify(stored)).not.toContain('\\u0000');
    expect(decodePayload(stored)).toEqual(payload);
  });

  it('passes through a payload stored without the envelope', () => {
    expect(decodePayload({ model_name: 'x' })).toEqual({ model_name: 'x' });
  });
});
