import OpenAI from 'openai';
import { Stack } from './support/stack';

// An inference worker on webgpu (COMPUTE_BACKEND=webgpu: on Mesa's lavapipe here, which naming
// the backend takes) serves chat completions through the engine's encoded decoding step, and
// answers what a worker on wasm answers: the same greedy tokens, drawn on the GPU or chosen
// from read-back logits, with the same logprobs. Both stacks serve the tiny model the maker
// writes from the same seed.

interface Answer {
  plain: string;
  streamed: string;
  withLogprobs: OpenAI.Chat.ChatCompletion;
}

async function answers(backend: 'wasm' | 'webgpu'): Promise<Answer> {
  const env: Record<string, string> = { COMPUTE_BACKEND: backend };
  if (process.env['XDG_RUNTIME_DIR']) env['XDG_RUNTIME_DIR'] = process.env['XDG_RUNTIME_DIR'];
  const stack = await Stack.start({ env });
  try {
    const model = stack.addTinyModel();
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('acme')).key, maxRetries: 0 });
    const request = { model, messages: [{ role: 'user' as const, content: 'Say something.' }], max_tokens: 24, temperature: 0 };
    const plain = await client.chat.completions.create(request);
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) streamed += chunk.choices[0]?.delta?.content ?? '';
    const withLogprobs = await client.chat.completions.create({ ...request, logprobs: true, top_logprobs: 2 });
    return { plain: plain.choices[0].message.content ?? '', streamed, withLogprobs };
  } finally {
    await stack.stop();
  }
}

describe('an inference worker on webgpu', () => {
  it('answers with the tokens and logprobs a worker on wasm gives', async () => {
    const wasm = await answers('wasm');
    const webgpu = await answers('webgpu');
    expect(wasm.plain.length).toBeGreaterThan(0);
    expect(webgpu.plain).toBe(wasm.plain);
    expect(webgpu.streamed).toBe(wasm.plain);
    const tokens = (a: Answer) => a.withLogprobs.choices[0].logprobs?.content ?? [];
    expect(tokens(webgpu).map((t) => t.token)).toEqual(tokens(wasm).map((t) => t.token));
    expect(tokens(wasm).length).toBeGreaterThan(0);
    tokens(wasm).forEach((t, i) => {
      expect(Math.abs(tokens(webgpu)[i].logprob - t.logprob)).toBeLessThan(1e-4);
      expect(tokens(webgpu)[i].top_logprobs.map((top) => top.token)).toEqual(t.top_logprobs.map((top) => top.token));
    });
  }, 240_000);
});
