import { isOpenAiRoute, isTinkerRoute } from './route-family';

describe('route families', () => {
  it("takes the Tinker SDK's routes under <root>/api/v1 for Tinker's, with any API_PREFIX", () => {
    for (const path of ['/api/v1/forward_backward', '/api/v1/client/config', '/api/training/api/v1/retrieve_future?x=1', '/api/v1/training_runs', '/api/v1/training_runs/s:train:0/checkpoints']) {
      expect(isTinkerRoute(path)).toBe(true);
      expect(isOpenAiRoute(path)).toBe(false);
    }
  });

  it("leaves OpenAI's routes OpenAI's, also under an API_PREFIX of /api", () => {
    for (const path of ['/v1/chat/completions', '/api/v1/chat/completions', '/api/v1/models', '/v1/forward_backward', '/api/v1/training_runs/x/files']) {
      expect(isTinkerRoute(path)).toBe(false);
      expect(isOpenAiRoute(path)).toBe(true);
    }
  });
});
