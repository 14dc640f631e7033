import { parseSamplerWeightsPath, samplerWeightsPath, samplingSessionId, servingNameOfSamplingSession } from './protocol';

describe('Tinker paths and sampling sessions', () => {
  it('reads back the client and name of a sampler-weights path, and nothing else', () => {
    const path = samplerWeightsPath('0b7c1e2a-1111-4222-8333-944455556666:train:0', 'sl-final');
    expect(parseSamplerWeightsPath(path)).toEqual({ modelId: '0b7c1e2a-1111-4222-8333-944455556666:train:0', name: 'sl-final' });
    expect(parseSamplerWeightsPath('tinker://client/weights/state')).toBeNull();
    expect(parseSamplerWeightsPath('https://example.com/sampler_weights/x')).toBeNull();
  });

  it('names the serving name in a sampling session, and refuses an id it did not make', () => {
    const name = 'wandb-artifact:///acme/tinker/s-train-0:step3';
    expect(servingNameOfSamplingSession(samplingSessionId(name))).toBe(name);
    expect(servingNameOfSamplingSession('sampling-')).toBeNull();
    expect(servingNameOfSamplingSession('sampling-!!')).toBeNull();
    expect(servingNameOfSamplingSession('3f2a:sample:0')).toBeNull();
  });
});
