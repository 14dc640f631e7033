import { ErrorCode, SampleTokensRequest, ServiceError } from '@trainyard/contracts';
import { checkAgainstModel, checkSampleTokensRequest, SamplingLimits } from './sample-tokens.validation';

const LIMITS: SamplingLimits = { maxSamples: 16, maxTokens: 4096, maxTopkPromptLogprobs: 20, maxStops: 4, maxResultBytes: 900 * 1024 };
const MODEL = { vocabSize: 512, contextWindow: 2048 };

function request(extra: Record<string, unknown> = {}, params: Record<string, unknown> = {}): SampleTokensRequest {
  return {
    request_id: 'r-1',
    entity_id: 'e-1',
    entity_name: 'acme',
    model: 'acme/project/agent',
    prompt_tokens: [10, 17, 24, 31],
    num_samples: 4,
    sampling_params: { max_tokens: 8, temperature: 1, top_k: -1, top_p: 1, stop: [], seed: null, ...params },
    prompt_logprobs: false,
    topk_prompt_logprobs: 0,
    ...extra,
  } as SampleTokensRequest;
}

function refusal(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('checkSampleTokensRequest', () => {
  it("takes Tinker's asample as the SDK sends it, filling in what it leaves out", () => {
    const checked = checkSampleTokensRequest(request({}, { max_tokens: null, temperature: undefined, top_k: undefined, top_p: undefined, stop: undefined, seed: undefined }), LIMITS);
    expect(checked.sampling_params).toEqual({ max_tokens: 4096, temperature: 1, top_k: -1, top_p: 1, stop: [], seed: null });
    expect(checkSampleTokensRequest(request({}, { stop: 'END', seed: 42 }), LIMITS).sampling_params).toMatchObject({ stop: ['END'], seed: 42 });
    expect(checkSampleTokensRequest(request({}, { stop: [7, 9] }), LIMITS).sampling_params.stop).toEqual([7, 9]);
  });

  it.each([
    [{ request_id: '' }, {}, 'request_id'],
    [{ model: 42 }, {}, 'model'],
    [{ prompt_tokens: [] }, {}, 'prompt'],
    [{ prompt_tokens: 'hello' }, {}, 'prompt'],
    [{ prompt_tokens: [1, -2] }, {}, 'prompt'],
    [{ prompt_tokens: [1, 2.5] }, {}, 'prompt'],
    [{ num_samples: 0 }, {}, 'num_samples'],
    [{ num_samples: 17 }, {}, 'num_samples'],
    [{ num_samples: '4' }, {}, 'num_samples'],
    [{ sampling_params: null }, {}, 'sampling_params'],
    [{}, { max_tokens: 0 }, 'sampling_params.max_tokens'],
    [{}, { max_tokens: 4097 }, 'sampling_params.max_tokens'],
    [{}, { temperature: -0.1 }, 'sampling_params.temperature'],
    [{}, { temperature: 'hot' }, 'sampling_params.temperature'],
    [{}, { top_k: -2 }, 'sampling_params.top_k'],
    [{}, { top_k: 1.5 }, 'sampling_params.top_k'],
    [{}, { top_p: 1.01 }, 'sampling_params.top_p'],
    [{}, { stop: ['a', 3] }, 'sampling_params.stop'],
    [{}, { stop: [-1] }, 'sampling_params.stop'],
    [{}, { stop: ['a', 'b', 'c', 'd', 'e'] }, 'sampling_params.stop'],
    [{}, { seed: 1.5 }, 'sampling_params.seed'],
    [{ prompt_logprobs: 'yes' }, {}, 'prompt_logprobs'],
    [{ topk_prompt_logprobs: 21 }, {}, 'topk_prompt_logprobs'],
    [{ topk_prompt_logprobs: -1 }, {}, 'topk_prompt_logprobs'],
  ])('refuses %j %j with invalid_request naming %s', (extra, params, param) => {
    const err = refusal(() => checkSampleTokensRequest(request(extra, params), LIMITS));
    expect(err.code).toBe(ErrorCode.InvalidRequest);
    expect(err.details.param).toBe(param);
    expect(err.message).toContain(param === 'request_id' ? 'request_id' : param.replace('sampling_params.', ''));
  });

  it('refuses what is not an object at all with invalid_request, never a TypeError', () => {
    expect(refusal(() => checkSampleTokensRequest(null as unknown as SampleTokensRequest, LIMITS)).code).toBe(ErrorCode.InvalidRequest);
  });
});

describe('checkAgainstModel', () => {
  const checked = (extra: Record<string, unknown> = {}, params: Record<string, unknown> = {}) => checkSampleTokensRequest(request(extra, params), LIMITS);

  it('takes token ids within the vocabulary and a prompt that leaves room, however long max_tokens is', () => {
    expect(() => checkAgainstModel(checked({ prompt_tokens: [0, 511] }, { stop: [511] }), MODEL, LIMITS)).not.toThrow();
    expect(() => checkAgainstModel(checked({ prompt_tokens: Array(2047).fill(3), num_samples: 1 }, { max_tokens: 4096 }), MODEL, LIMITS)).not.toThrow();
  });

  it('refuses a prompt token outside the vocabulary, naming it and the prompt', () => {
    const err = refusal(() => checkAgainstModel(checked({ prompt_tokens: [1, 512] }), MODEL, LIMITS));
    expect(err).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'prompt' } });
    expect(err.message).toMatch(/prompt token 1 is 512, outside the vocabulary .*0 to 511/);
  });

  it('refuses a stop token outside the vocabulary', () => {
    expect(refusal(() => checkAgainstModel(checked({}, { stop: [600] }), MODEL, LIMITS))).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'sampling_params.stop' } });
  });

  it('refuses a prompt that fills the context window with context_length_exceeded', () => {
    const err = refusal(() => checkAgainstModel(checked({ prompt_tokens: Array(2048).fill(3) }), MODEL, LIMITS));
    expect(err).toMatchObject({ code: ErrorCode.ContextLengthExceeded, details: { param: 'prompt' } });
    expect(err.message).toContain('2048');
  });

  it('refuses a result too large for one reply, saying what to lower', () => {
    const many = refusal(() => checkAgainstModel(checked({ num_samples: 16 }, { max_tokens: 4096 }), { vocabSize: 512, contextWindow: 8192 }, LIMITS));
    expect(many).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'num_samples' } });
    const wide = refusal(() => checkAgainstModel(checked({ prompt_tokens: Array(2000).fill(3), num_samples: 1, topk_prompt_logprobs: 20 }), MODEL, LIMITS));
    expect(wide).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'topk_prompt_logprobs' } });
    // The samples stop at the window: 16 x 48 tokens is small whatever max_tokens says.
    expect(() => checkAgainstModel(checked({ prompt_tokens: Array(2000).fill(3), num_samples: 16 }, { max_tokens: 4096 }), MODEL, LIMITS)).not.toThrow();
  });
});
