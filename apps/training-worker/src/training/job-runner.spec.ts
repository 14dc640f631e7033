import { validateExperimentalConfig } from '@trainyard/art';
import { ArtifactCache, DiskArtifactStore, putBundleFromDir, readBundleManifest } from '@trainyard/artifacts';
import { BlobRef, ClaimedJob, ErrorCode, ResolveModelReply, RlJobPayload, ServiceError, SftJobPayload, Subjects, TrainingSftSettings } from '@trainyard/contracts';
import {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  DEFAULT_LORA_SPEC,
  initLoraWeights,
  makeModel,
  matMulThreads,
  readModelConfig,
  readPeftAdapter,
  selectBackend,
  writePeftAdapter,
} from '@trainyard/engine';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { loadConfig } from '@trainyard/runtime';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { AdapterArtifacts } from './adapter-artifacts';
import { checkpointMetrics, JobInterrupted, JobRunner } from './job-runner';

const MODEL = 'wandb-artifact:///acme/proj/agent';
const SCOPE = { entity_id: 'e1', entity_name: 'acme' };

const CONVERSATIONS = [
  { messages: [{ role: 'user', content: 'capital of France?' }, { role: 'assistant', content: 'Paris' }] },
  { messages: [{ role: 'user', content: 'two plus two' }, { role: 'assistant', content: 'four' }] },
];

/** An RL group of two trajectories with different rewards: one gradient step's worth. */
const GROUPS = [
  {
    trajectories: [0, 1].map((reward) => ({
      messagesAndChoices: [
        { role: 'user', content: 'hi' },
        { choice: { tokenIds: [5 + reward, 7], logprobs: [-1, -1], message: { role: 'assistant', content: 'ok' } } },
      ],
      reward,
    })),
  },
];

/** The same group as the client sends it (ART's shape), what an RL job's stored groups hold. */
const ART_GROUPS = [
  {
    trajectories: [0, 1].map((reward) => ({
      messages_and_choices: [
        { role: 'user', content: 'hi' },
        { message: { role: 'assistant', content: 'ok' }, logprobs: { content: [5 + reward, 7].map((token_id) => ({ token_id, logprob: -1 })) } },
      ],
      reward,
    })),
    metadata: { task: 'greeting' },
  },
];

/** ART_GROUPS in the artifact store, as the registry stores an RL job's groups. */
let storedGroups: { sha256: string; bytes: number };

/** An SFT job's payload as the orchestrator stores it. */
function sft(settings: Partial<TrainingSftSettings> = {}): SftJobPayload {
  return { version: 2, type: 'sft', model_name: MODEL, entity_name: 'acme', conversations: CONVERSATIONS, settings: { batchSize: 'auto', learningRate: 5e-5, assistantTurns: 'all', ...settings } };
}

/** An RL job's payload as the orchestrator makes it of `experimentalConfig`: its groups named in the artifact store. */
function rl(experimentalConfig: Record<string, unknown> = {}): RlJobPayload {
  const { config, errors } = validateExperimentalConfig(experimentalConfig);
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  return { version: 3, type: 'rl', model_name: MODEL, entity_name: 'acme', trajectory_groups: storedGroups, settings: config.settings, kl_reference: config.klReference };
}

/** The same job as stored before its groups were stored once: held in the payload (version 2). */
function rlInline(experimentalConfig: Record<string, unknown> = {}): RlJobPayload {
  const { version: _, trajectory_groups: __, ...rest } = rl(experimentalConfig) as Extract<RlJobPayload, { version: 3 }>;
  return { ...rest, version: 2, groups: GROUPS };
}

interface Call {
  subject: string;
  payload: Record<string, unknown>;
}

/** The registry and orchestrator as the runner sees them over RPC: records every call. */
class FakeRpc {
  readonly calls: Call[] = [];
  cancelRequested = false;
  /** Progress reports whose answer is lost (a timeout), before they are answered. */
  lostReports = 0;

  constructor(private readonly resolved: (model: string) => Partial<ResolveModelReply>) {}

  async request(subject: { name: string }, payload: Record<string, unknown>): Promise<unknown> {
    this.calls.push({ subject: subject.name, payload });
    switch (subject.name) {
      case Subjects.registry.resolveModel.name:
        return { base_model: 'tiny', model_id: 'm1', step: 0, adapter_sha256: null, ...this.resolved(payload['model'] as string) };
      case Subjects.training.reportProgress.name:
        if (this.lostReports > 0) {
          this.lostReports--;
          throw new ServiceError(ErrorCode.Timeout, `${subject.name} timed out`);
        }
        return { cancel_requested: this.cancelRequested };
      case Subjects.registry.recordCheckpoint.name:
        return { step: 1 };
      default:
        throw new Error(`unexpected request on ${subject.name}`);
    }
  }

  of(subject: { name: string }): Record<string, unknown>[] {
    return this.calls.filter((c) => c.subject === subject.name).map((c) => c.payload);
  }
}

/** The blob store: the job's payload to take, and the files the runner puts. */
class FakeBlobs {
  readonly put_: Map<string, Buffer> = new Map();

  /** Blobs read: the payload only (an RL job's groups come from the artifact store). */
  taken = 0;

  constructor(private readonly payload: unknown) {}

  async takeJson(): Promise<unknown> {
    this.taken++;
    return this.payload;
  }

  async put(data: Uint8Array): Promise<BlobRef> {
    const name = `blob-${this.put_.size}`;
    this.put_.set(name, Buffer.from(data));
    return { bucket: 'BLOBS', name, size: data.byteLength, sha256: 'x' };
  }
}

function job(type: 'rl' | 'sft'): ClaimedJob {
  return { job_id: 'j1', type, model_id: 'm1', ...SCOPE, model_name: MODEL, payload: { bucket: 'BLOBS', name: 'payload', size: 0, sha256: 'x' } };
}

describe('JobRunner (wasm, tiny model)', () => {
  let root: string;
  let baseDir: string;
  let adapterDir: string;
  let adapterBundle: string;
  let store: DiskArtifactStore;

  beforeAll(async () => {
    await selectBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'training-worker-runner-'));
    baseDir = join(root, 'tiny');
    makeModel({ preset: 'tiny', out: baseDir, seed: 0 });
    adapterDir = await mkdtemp(join(root, 'adapter-'));
    const config = await readModelConfig(baseDir);
    await writePeftAdapter(adapterDir, { baseModel: 'tiny', spec: DEFAULT_LORA_SPEC, tensors: initLoraWeights(config, DEFAULT_LORA_SPEC, 1) });
    store = new DiskArtifactStore(join(root, 'artifacts'));
    adapterBundle = (await putBundleFromDir(store, adapterDir)).sha256;
    storedGroups = await store.put(Buffer.from(JSON.stringify(ART_GROUPS)));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  function runner(
    payload: unknown,
    resolved: (model: string) => Partial<ResolveModelReply> = () => ({ base_model_dir: baseDir, adapter_bundle: adapterBundle }),
    env: Record<string, string> = {},
  ) {
    const rpc = new FakeRpc(resolved);
    const blobs = new FakeBlobs(payload);
    const config = loadConfig(TrainingWorkerConfig, env);
    const adapters = new AdapterArtifacts(store, new ArtifactCache(store, { dir: join(root, `cache-${Math.random()}`), maxBytes: 2 ** 30 }), config);
    const jobRunner = new JobRunner(rpc as unknown as RpcClient, blobs as unknown as BlobStore, config, adapters);
    return { rpc, blobs, jobRunner };
  }

  it('asks again for a progress report whose answer was lost, instead of giving the job back', async () => {
    const { rpc, jobRunner } = runner(sft({ batchSize: 1, learningRate: 1e-2 }));
    rpc.lostReports = 2;
    expect(await jobRunner.run(job('sft'), new AbortController().signal, () => undefined)).toBe(1);
    jobRunner.onModuleDestroy();
    // The started report went three times (two answers lost), then each step once.
    expect(rpc.of(Subjects.training.reportProgress).map((p) => p['kind'])).toEqual(['started', 'started', 'started', 'step', 'step']);
  });

  it('trains an SFT job, reports each step, and records the new adapter as the registry numbers it', async () => {
    const { rpc, jobRunner } = runner(sft({ batchSize: 1, learningRate: 1e-2 }));
    const step = await jobRunner.run(job('sft'), new AbortController().signal, () => undefined);
    jobRunner.onModuleDestroy();

    expect(step).toBe(1);
    expect(rpc.of(Subjects.registry.resolveModel)).toEqual([{ ...SCOPE, model: MODEL }]);
    const progress = rpc.of(Subjects.training.reportProgress);
    expect(progress[0]).toEqual({ job_id: 'j1', kind: 'started', num_sequences: 2, no_gradient_steps_reason: null });
    expect(progress.slice(1).map((p) => [p['kind'], p['step']])).toEqual([
      ['step', 1],
      ['step', 2],
    ]);

    const [record] = rpc.of(Subjects.registry.recordCheckpoint);
    expect(record).toMatchObject({ ...SCOPE, model_id: 'm1', job_id: 'j1' });
    const bundle = record['adapter_bundle'] as string;
    expect((await readBundleManifest(store, bundle)).files.map((f) => f.name)).toEqual([ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]);
    // The metrics are the means of the steps' own, under "training/".
    const metrics = record['metrics'] as Record<string, number>;
    const losses = progress.slice(1).map((p) => (p['metrics'] as Record<string, number>)['loss']);
    expect(metrics['training/loss']).toBeCloseTo((losses[0] + losses[1]) / 2, 6);

    // The bundle stored is a PEFT adapter that differs from the one the job started from.
    const cache = new ArtifactCache(store, { dir: join(root, 'check-cache'), maxBytes: 2 ** 30 });
    const [before, after] = [await readPeftAdapter(adapterDir), await cache.withBundle(bundle, (dir) => readPeftAdapter(dir))];
    expect(after.baseModel).toBe('tiny');
    const name = [...before.tensors.keys()].find((n) => n.includes('lora_B')) ?? '';
    const [b0, b1] = [before.tensors.get(name)?.data ?? [], after.tensors.get(name)?.data ?? []];
    expect(b1.length).toBe(b0.length);
    expect(b1.length).toBeGreaterThan(0);
    expect(Array.from(b1).some((v, i) => v !== b0[i])).toBe(true);
  });

  it('trains every epoch of an SFT job and measures the validation loss at the end of each', async () => {
    const validation = [{ messages: [{ role: 'user', content: 'capital of Italy?' }, { role: 'assistant', content: 'Rome' }] }];
    const payload = { ...sft({ batchSize: 1, learningRate: 1e-2 }), epochs: 2, shuffle_seed: 7, validation_conversations: validation };
    const { rpc, jobRunner } = runner(payload);
    await jobRunner.run(job('sft'), new AbortController().signal, () => undefined);
    jobRunner.onModuleDestroy();

    const progress = rpc.of(Subjects.training.reportProgress);
    expect(progress[0]).toMatchObject({ kind: 'started', num_sequences: 4 });
    const steps = progress.slice(1).map((p) => [p['step'], 'valid_loss' in (p['metrics'] as object)]);
    expect(steps).toEqual([
      [1, false],
      [2, true],
      [3, false],
      [4, true],
    ]);
    const validLosses = progress.slice(1).flatMap((p) => (p['metrics'] as Record<string, number>)['valid_loss'] ?? []);
    expect(validLosses.every((loss) => Number.isFinite(loss) && loss > 0)).toBe(true);
    expect(rpc.of(Subjects.registry.recordCheckpoint)).toHaveLength(1);
  });

  it('reads an RL job\'s groups by digest from the artifact store and trains on them as on the same groups held in an older payload', async () => {
    const losses = async (payload: RlJobPayload) => {
      const { rpc, blobs, jobRunner } = runner(payload);
      expect(await jobRunner.run(job('rl'), new AbortController().signal, () => undefined)).toBe(1);
      jobRunner.onModuleDestroy();
      expect(blobs.taken).toBe(1);
      const steps = rpc.of(Subjects.training.reportProgress).flatMap((p) => (p['kind'] === 'step' ? [p['metrics'] as Record<string, number>] : []));
      // Each step reports the job's rewards beside the trainer's own metrics, and so does the checkpoint.
      for (const metrics of steps) {
        expect(metrics).toMatchObject({ reward: 0.5, reward_std_dev: 0.5, num_trajectories: 2, num_groups_submitted: 1, num_groups_trainable: 1, num_trainable_tokens: 4 });
      }
      expect(rpc.of(Subjects.registry.recordCheckpoint)[0]['metrics']).toMatchObject({ 'training/reward': 0.5, 'training/num_trajectories': 2 });
      return steps.map((metrics) => metrics['loss']);
    };
    const byReference = await losses(rl({ learning_rate: 1e-2 }));
    expect(byReference).toHaveLength(1);
    expect(Number.isFinite(byReference[0])).toBe(true);
    expect(await losses(rlInline({ learning_rate: 1e-2 }))).toEqual(byReference);
  });

  it('fails an RL job whose stored groups are not in the artifact store, before its first step', async () => {
    const { rpc, jobRunner } = runner({ ...rl(), trajectory_groups: { sha256: 'f'.repeat(64), bytes: 10 } });
    await expect(jobRunner.run(job('rl'), new AbortController().signal, () => undefined)).rejects.toThrow(/not in the artifact store/);
    jobRunner.onModuleDestroy();
    expect(rpc.of(Subjects.training.reportProgress)).toEqual([]);
  });

  it('fails an RL job with a trajectory the trainer cannot train, naming it by its place in the request, before its first step', async () => {
    const outside = { trajectories: GROUPS[0].trajectories.map((t, i) => (i === 1 ? { ...t, messagesAndChoices: [t.messagesAndChoices[0], { choice: { ...(t.messagesAndChoices[1] as { choice: object }).choice, tokenIds: [10_000_000, 7] } }] } : t)) };
    const { rpc, jobRunner } = runner({ ...rlInline(), groups: [outside] });
    await expect(jobRunner.run(job('rl'), new AbortController().signal, () => undefined)).rejects.toThrow(/^trajectory_groups\[0\]\.trajectories\[1\]: token id 10000000 is outside the vocabulary$/);
    jobRunner.onModuleDestroy();
    expect(rpc.of(Subjects.training.reportProgress)).toEqual([]);
  });

  it("resolves the KL reference step within the job's own scope", async () => {
    const { rpc, jobRunner } = runner(rl({ kl_penalty_coef: 0.1, kl_penalty_reference_step: 0 }));
    await jobRunner.run(job('rl'), new AbortController().signal, () => undefined);
    jobRunner.onModuleDestroy();
    expect(rpc.of(Subjects.registry.resolveModel)).toEqual([
      { ...SCOPE, model: MODEL },
      { ...SCOPE, model: `${MODEL}:step0` },
    ]);
    expect(rpc.of(Subjects.training.reportProgress)[0]).toEqual({ job_id: 'j1', kind: 'started', num_sequences: 1, no_gradient_steps_reason: null });
    expect(rpc.of(Subjects.registry.recordCheckpoint)).toHaveLength(1);
  });

  it('counts a KL step lag back from the checkpoint the job starts from, and takes a named checkpoint as named', async () => {
    const at3 = (model: string) => ({ base_model_dir: baseDir, adapter_bundle: adapterBundle, step: model === MODEL ? 3 : 1 });
    const lagged = runner(rl({ kl_penalty_coef: 0.1, kl_penalty_step_lag: 2 }), at3);
    await lagged.jobRunner.run(job('rl'), new AbortController().signal, () => undefined);
    lagged.jobRunner.onModuleDestroy();
    expect(lagged.rpc.of(Subjects.registry.resolveModel)[1]).toEqual({ ...SCOPE, model: `${MODEL}:step1` });

    const other = 'wandb-artifact:///acme/proj/other:step4';
    const named = runner(rl({ kl_penalty_coef: 0.1, kl_ref_adapter_path: other }), at3);
    await named.jobRunner.run(job('rl'), new AbortController().signal, () => undefined);
    named.jobRunner.onModuleDestroy();
    expect(named.rpc.of(Subjects.registry.resolveModel)[1]).toEqual({ ...SCOPE, model: other });
  });

  it('fails an RL job whose KL reference has no adapter, before its first step', async () => {
    const { rpc, jobRunner } = runner(rl({ kl_penalty_coef: 0.1, kl_penalty_reference_step: 0 }), (model) => ({ base_model_dir: baseDir, adapter_bundle: model === MODEL ? adapterBundle : null }));
    await expect(jobRunner.run(job('rl'), new AbortController().signal, () => undefined)).rejects.toThrow(`the KL reference ${MODEL}:step0 has no adapter`);
    jobRunner.onModuleDestroy();
    expect(rpc.of(Subjects.training.reportProgress).filter((p) => p['kind'] === 'step')).toEqual([]);
    expect(rpc.of(Subjects.registry.recordCheckpoint)).toEqual([]);
  });

  it('passes on a cancel the orchestrator asks for in a progress reply', async () => {
    const { rpc, jobRunner } = runner(sft({ batchSize: 1 }));
    rpc.cancelRequested = true;
    const onCancel = jest.fn();
    await jobRunner.run(job('sft'), new AbortController().signal, onCancel);
    jobRunner.onModuleDestroy();
    expect(onCancel).toHaveBeenCalled();
  });

  it('records nothing when the job is stopped', async () => {
    const { rpc, jobRunner } = runner(sft({ batchSize: 1 }));
    const abort = new AbortController();
    abort.abort(new JobInterrupted('cancelled'));
    await expect(jobRunner.run(job('sft'), abort.signal, () => undefined)).rejects.toThrow();
    jobRunner.onModuleDestroy();
    expect(rpc.of(Subjects.registry.recordCheckpoint)).toEqual([]);
  });

  // After the other jobs that train: the matmul threads, once started, stay for the rest of the process.
  it('trains an SFT job on 2 matmul threads (MATMUL_THREADS) to the losses of one thread', async () => {
    const losses = async (threads: number) => {
      const { rpc, jobRunner } = runner(sft({ batchSize: 1, learningRate: 1e-2 }), undefined, { MATMUL_THREADS: String(threads) });
      await jobRunner.run(job('sft'), new AbortController().signal, () => undefined);
      jobRunner.onModuleDestroy();
      expect(matMulThreads()).toBe(threads);
      return rpc.of(Subjects.training.reportProgress).slice(1).map((p) => (p['metrics'] as Record<string, number>)['loss']);
    };
    const one = await losses(1);
    expect(await losses(2)).toEqual(one);
  });

  it('fails a job whose model resolves to no adapter', async () => {
    const { jobRunner } = runner(sft(), () => ({ base_model_dir: baseDir, adapter_bundle: null }));
    await expect(jobRunner.run(job('sft'), new AbortController().signal, () => undefined)).rejects.toThrow(`${MODEL} resolved to no adapter`);
  });
});

describe('checkpointMetrics', () => {
  it('averages each metric over the steps that have it, skipping values that are not finite', () => {
    expect(checkpointMetrics([{ loss: 2, reward: 1 }, { loss: 4, reward: Number.NaN }, { loss: 3 }])).toEqual({
      'training/loss': 3,
      'training/reward': 1,
    });
  });

  it('is empty for a job without steps', () => {
    expect(checkpointMetrics([])).toEqual({});
  });
});
