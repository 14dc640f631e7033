import { waitFor } from '@trainyard/testing';
import OpenAI from 'openai';
import { Stack } from './stack';

/** What a spec that speaks the OpenAI API through real clients starts with. */
export interface OpenAIStack {
  stack: Stack;
  /** The base model served (the engine's tiny model, random weights, real tokenizer). */
  model: string;
  /** A key of entity `acme`. */
  key: string;
  /** `${stack.baseUrl}/v1`, the base URL every client is pointed at. */
  baseURL: string;
  /** The official openai SDK with that key, no retries (a retry would hide a failure). */
  client: OpenAI;
}

/**
 * A whole stack serving the tiny model as `trainyard/tiny-chat`, with a key of `acme` and an
 * openai client for it. `env` adds to (or overrides) a completion budget of 256 tokens.
 */
export async function startOpenAIStack(env: Record<string, string> = {}): Promise<OpenAIStack> {
  const stack = await Stack.start({ env: { MAX_COMPLETION_TOKENS: '256', ...env } });
  try {
    const model = stack.addTinyModel();
    const key = (await stack.createKey('acme')).key;
    const baseURL = `${stack.baseUrl}/v1`;
    return { stack, model, key, baseURL, client: new OpenAI({ baseURL, apiKey: key, maxRetries: 0 }) };
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/** The error a call fails with (an OpenAI APIError for an HTTP error), or undefined when it succeeds. */
export const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** Waits for a preview training job (RL or SFT) to end; its final record. */
export function waitForTrainingJob(stack: Stack, key: string, id: string, timeoutMs = 240_000): Promise<{ status: string; error_message: string | null; checkpoint_step: number | null }> {
  return waitFor(
    async () => {
      const record = await stack.json<{ status: string; error_message: string | null; checkpoint_step: number | null }>('GET', `/v1/preview/training-jobs/${id}`, key);
      return TERMINAL.includes(record.status) && record;
    },
    { what: `training job ${id}`, timeoutMs, intervalMs: 500 },
  );
}

/** Waits for an OpenAI fine-tuning job to end; its final record. */
export function waitForFineTuningJob(client: OpenAI, id: string, timeoutMs = 240_000): Promise<OpenAI.FineTuning.FineTuningJob> {
  return waitFor(
    async () => {
      const job = await client.fineTuning.jobs.retrieve(id);
      return TERMINAL.includes(job.status) && job;
    },
    { what: `fine-tuning job ${id}`, timeoutMs, intervalMs: 500 },
  );
}
