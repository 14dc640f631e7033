// A small client for Trainyard's training routes: what OpenPipe ART's serverless backend
// sends, written out in TypeScript. Only fetch and the official openai package are used.

export interface Config {
  /** e.g. http://localhost:8080/v1 */
  baseUrl: string;
  apiKey: string;
}

export interface TrainingEvent {
  id: string;
  type: 'training_started' | 'gradient_step' | 'training_ended' | 'training_failed';
  data: Record<string, unknown>;
  created_at: string;
}

export function configFromEnv(): Config {
  const apiKey = process.env['TRAINYARD_API_KEY'];
  if (!apiKey) throw new Error('Set TRAINYARD_API_KEY (create one with: node dist/apps/gateway/keys.js create --entity <you> --name examples)');
  return { baseUrl: process.env['TRAINYARD_BASE_URL'] ?? 'http://localhost:8080/v1', apiKey };
}

export async function api<T>(config: Config, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${config.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${config.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

export interface Model {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
}

export async function getOrCreateModel(config: Config, project: string, name: string, baseModel?: string): Promise<Model> {
  const base = baseModel ?? (await api<string[]>(config, 'GET', '/preview/base-models'))[0];
  return api<Model>(config, 'POST', '/preview/models', { entity: null, project, name, base_model: base, return_existing: true });
}

export async function newestStep(config: Config, modelId: string): Promise<number> {
  const page = await api<{ data: { step: number }[] }>(config, 'GET', `/preview/models/${modelId}/checkpoints?limit=1&order=desc`);
  return page.data[0]?.step ?? 0;
}

/** Polls the job's events every second, as ART does, printing each; resolves on training_ended. */
export async function followJob(config: Config, jobId: string, print: (event: TrainingEvent) => void): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const page = await api<{ data: TrainingEvent[]; has_more: boolean }>(
      config,
      'GET',
      `/preview/training-jobs/${jobId}/events${after ? `?after=${after}` : ''}`,
    );
    for (const event of page.data) {
      print(event);
      after = event.id;
      if (event.type === 'training_ended') return;
      if (event.type === 'training_failed') throw new Error(`training failed: ${String(event.data['error_message'])}`);
    }
    if (!page.has_more) await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

export function printEvent(event: TrainingEvent): void {
  if (event.type === 'gradient_step') {
    const m = event.data as Record<string, number>;
    const shown = ['loss', 'policy_loss', 'grad_norm', 'reward', 'num_tokens'].filter((k) => k in m).map((k) => `${k}=${m[k].toPrecision(4)}`);
    console.log(`  step: ${shown.join(' ')}`);
  } else {
    console.log(`  ${event.type} ${Object.keys(event.data).length ? JSON.stringify(event.data) : ''}`);
  }
}
