import { ArtifactCache, DiskArtifactStore } from '@trainyard/artifacts';
import { BlobRef, ClaimedTinkerCall, Subjects, TinkerCall, TinkerForwardBackwardResult } from '@trainyard/contracts';
import { makeModel, selectBackend } from '@trainyard/engine';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { loadConfig } from '@trainyard/runtime';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { AdapterArtifacts } from '../training/adapter-artifacts';
import { TinkerCallFailed, TinkerExecutor } from './tinker-executor';

const LORA = { rank: 4, seed: 1, train_attn: true, train_mlp: true, train_unembed: true };
const TOKENS = [12, 40, 77, 101, 140, 33, 250, 7];
const ADAM = { learning_rate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 };

const forwardBackward = (weights = TOKENS.slice(1).map(() => 1)): TinkerCall => ({
  kind: 'forward_backward',
  loss_fn: 'cross_entropy',
  loss_fn_config: {},
  data: [
    {
      model_input: TOKENS.slice(0, -1),
      loss_fn_inputs: {
        target_tokens: { dtype: 'int64', shape: [TOKENS.length - 1], values: TOKENS.slice(1) },
        weights: { dtype: 'float32', shape: [weights.length], values: weights },
      },
    },
  ],
});

/** The blob store as the executor sees it: each call's body is parked under its request id. */
class FakeBlobs {
  readonly parked = new Map<string, unknown>();

  async takeJson(ref: BlobRef): Promise<unknown> {
    return this.parked.get(ref.name);
  }
}

describe('TinkerExecutor (wasm, tiny model)', () => {
  let root: string;
  let baseDir: string;
  let blobs: FakeBlobs;
  let executor: TinkerExecutor;
  let calls = 0;

  beforeAll(async () => {
    await selectBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'tinker-executor-'));
    baseDir = join(root, 'tiny');
    makeModel({ preset: 'tiny', out: baseDir, seed: 0 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  beforeEach(() => {
    blobs = new FakeBlobs();
    const rpc = {
      request: async (subject: { name: string }) => {
        if (subject.name === Subjects.registry.resolveModel.name) return { base_model: 'tiny', base_model_dir: baseDir, base_model_bundle: null, model_id: null, step: null, adapter_bundle: null };
        throw new Error(`unexpected request on ${subject.name}`);
      },
    } as unknown as RpcClient;
    const config = loadConfig(TrainingWorkerConfig, {});
    const store = new DiskArtifactStore(join(root, 'artifacts'));
    const cache = new ArtifactCache(store, { dir: join(root, `cache-${calls}`), maxBytes: 2 ** 30 });
    const adapters = new AdapterArtifacts(store, cache, config);
    executor = new TinkerExecutor(rpc, blobs as unknown as BlobStore, adapters, config, store, cache);
  });
  afterEach(() => executor.onModuleDestroy());

  function claimed(clientId: string, seq: number, applied: number, call: TinkerCall, requestId = `r-${calls++}`): ClaimedTinkerCall {
    blobs.parked.set(requestId, call);
    return {
      request_id: requestId,
      seq_id: seq,
      client_id: clientId,
      entity_id: 'e1',
      entity_name: 'acme',
      model_id: 'm1',
      model_name: 'wandb-artifact:///acme/tinker/c',
      base_model: 'tiny',
      lora_config: LORA,
      applied_seq: applied,
      call: { bucket: 'BLOBS', name: requestId, size: 0, sha256: 'x' },
    };
  }

  it('keeps a client between calls: forward_backward, optim_step, and the loss falls', async () => {
    const losses: number[] = [];
    let seq = 0;
    for (let step = 0; step < 4; step++) {
      const out = (await executor.run(claimed('c1', seq + 1, seq, forwardBackward()))) as TinkerForwardBackwardResult;
      losses.push(out.metrics['loss:sum']);
      expect(out.loss_fn_outputs[0].logprobs).toHaveLength(TOKENS.length - 1);
      await executor.run(claimed('c1', seq + 2, seq + 1, { kind: 'optim_step', adam_params: ADAM }));
      seq += 2;
    }
    expect(losses[3]).toBeLessThan(losses[0]);
  });

  it("answers a redelivered call with its first result, without applying it twice", async () => {
    const first = claimed('c2', 1, 0, forwardBackward(), 'again');
    const a = await executor.run(first);
    blobs.parked.set('again', forwardBackward());
    expect(await executor.run(first)).toEqual(a);
    // The next call sees one accumulation: the client's applied seq is 1, as the orchestrator says.
    await expect(executor.run(claimed('c2', 2, 1, { kind: 'optim_step', adam_params: ADAM }))).resolves.toBeDefined();
  });

  it('fails bad data as the caller\'s error and keeps the client usable', async () => {
    const bad = executor.run(claimed('c3', 1, 0, forwardBackward([1, 1])));
    await expect(bad).rejects.toMatchObject({ category: 'User', stateLost: false });
    await expect(bad).rejects.toThrow(/weights has 2 values for 7 input tokens/);
    await expect(executor.run(claimed('c3', 2, 1, forwardBackward()))).resolves.toBeDefined();
  });

  it('says the state is lost when asked to continue a client it does not hold, rather than starting afresh', async () => {
    const lost = executor.run(claimed('never-seen', 5, 4, forwardBackward()));
    await expect(lost).rejects.toBeInstanceOf(TinkerCallFailed);
    await expect(lost).rejects.toMatchObject({ category: 'Server', stateLost: true });
    await expect(lost).rejects.toThrow(/lost its state/);
  });
});
