import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ClaimedTinkerCall, ErrorCode, ServiceError, Subjects, TinkerCall, TinkerDatum, TinkerLoraConfig, TinkerResult } from '@trainyard/contracts';
import {
  InvalidTrainingInput,
  LOSS_FUNCTIONS,
  LoadedModel,
  LoraSpec,
  LoraTarget,
  LoraTrainingClient,
  LossFunction,
  TrainingDatum,
  loadModel,
  readTrainingState,
  writeTrainingState,
} from '@trainyard/engine';
import { ARTIFACT_STORE, ArtifactCache, ArtifactStore } from '@trainyard/artifacts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { samplerWeightsPath, statePath } from '@trainyard/tinker';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { AdapterArtifacts } from '../training/adapter-artifacts';

/**
 * A training client no call has used for this long is dropped from memory: a session the user
 * walked away from must not hold its adapter and optimizer here for ever. A later call of it
 * fails as a lost state does (TinkerCallsService), saying so.
 */
export const CLIENT_IDLE_MS = 60 * 60_000;

/** Tinker's LoRA scale: alpha is fixed, so the update's size does not depend on the rank's choice through alpha/r alone. */
export const TINKER_LORA_ALPHA = 32;

/**
 * Why a call failed: the caller's (User: bad data, an unknown loss) or ours (Server). With
 * stateLost, the client's state in this worker can no longer be trusted (or was never here),
 * and every later call of the client fails too.
 */
export class TinkerCallFailed extends Error {
  constructor(
    message: string,
    readonly category: 'User' | 'Server',
    readonly stateLost = false,
  ) {
    super(message);
  }
}

/** The calls that change a client's state step by step, so that one failing halfway leaves it neither before nor after. */
const CHANGES_STATE_IN_PLACE = new Set<TinkerCall['kind']>(['forward_backward', 'optim_step']);

interface HeldClient {
  client: LoraTrainingClient;
  /** seq_id of the last call applied to it here. */
  appliedSeq: number;
  /** That call's result, for a redelivery of it whose first completion did not reach the orchestrator. */
  last?: { requestId: string; result: TinkerResult };
  usedAt: number;
}

/**
 * Runs Tinker calls. Each training client's adapter, accumulated gradients and Adam moments
 * stay in this worker's memory between calls (LoraTrainingClient), so forward_backward then
 * optim_step cost what one step of an SFT job costs. The base models are loaded once each,
 * apart from the job runner's (a client's adapter is attached only during its own calls). When
 * this process stops, its clients' state is gone: the orchestrator then fails their next calls
 * (TinkerCallsService), and nothing trains on silently from a different state.
 */
@Injectable()
export class TinkerExecutor implements OnModuleDestroy {
  private readonly logger = new Logger(TinkerExecutor.name);
  private readonly models = new Map<string, LoadedModel>();
  private readonly clients = new Map<string, HeldClient>();

  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly adapters: AdapterArtifacts,
    @Inject(TrainingWorkerConfig) private readonly config: TrainingWorkerConfig,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly cache: ArtifactCache,
  ) {}

  onModuleDestroy(): void {
    for (const { client } of this.clients.values()) client.dispose();
    this.clients.clear();
    for (const lm of this.models.values()) lm.dispose();
    this.models.clear();
  }

  async run(claimed: ClaimedTinkerCall): Promise<TinkerResult> {
    this.dropIdle(Date.now());
    const call = await this.blobs.takeJson(claimed.call);
    const again = this.clients.get(claimed.client_id);
    if (again?.last?.requestId === claimed.request_id && again.appliedSeq === claimed.seq_id) return again.last.result;
    const held = await this.clientFor(claimed);
    held.usedAt = Date.now();
    try {
      const result = await this.execute(claimed, held.client, call);
      held.appliedSeq = claimed.seq_id;
      held.last = { requestId: claimed.request_id, result };
      return result;
    } catch (err) {
      if (err instanceof InvalidTrainingInput) {
        // Checked before any work: the client's state is as it was.
        held.appliedSeq = claimed.seq_id;
        throw new TinkerCallFailed(err.message, 'User');
      }
      if (err instanceof TinkerCallFailed) {
        if (!err.stateLost) held.appliedSeq = claimed.seq_id;
        throw err;
      }
      if (!CHANGES_STATE_IN_PLACE.has(call.kind)) {
        // A save or a load changes nothing of the client unless it completes.
        held.appliedSeq = claimed.seq_id;
        throw new TinkerCallFailed(`${call.kind} failed: ${(err as Error).message}`, 'Server');
      }
      // Half a forward_backward may have been accumulated, half an optim_step applied: the state is no longer what the calls made it.
      this.drop(claimed.client_id);
      throw new TinkerCallFailed(`${call.kind} failed in the worker: ${(err as Error).message}`, 'Server', true);
    }
  }

  private async execute(claimed: ClaimedTinkerCall, client: LoraTrainingClient, call: TinkerCall): Promise<TinkerResult> {
    switch (call.kind) {
      case 'forward':
      case 'forward_backward': {
        const lossFn = lossFunction(call.loss_fn);
        const data = call.data.map(toTrainingDatum);
        const out = call.kind === 'forward' ? await client.forward(data, lossFn, call.loss_fn_config) : await client.forwardBackward(data, lossFn, call.loss_fn_config);
        return { loss_fn_outputs: out.logprobs.map((l) => ({ logprobs: Array.from(l) })), metrics: out.metrics };
      }
      case 'optim_step': {
        const p = call.adam_params;
        return client.optimStep({ learningRate: p.learning_rate, beta1: p.beta1, beta2: p.beta2, eps: p.eps, weightDecay: p.weight_decay, gradClipNorm: p.grad_clip_norm });
      }
      case 'save_weights_for_sampler':
        return this.saveForSampler(claimed, client, call.name);
      case 'save_weights':
        return this.saveState(claimed, client, call.name, call.overwrite);
      case 'load_weights':
        return this.loadState(claimed, client, call.path, call.optimizer);
    }
  }

  /** save_state: the adapter and Adam's state, as one safetensors file in the artifact store, recorded by the orchestrator. */
  private async saveState(claimed: ClaimedTinkerCall, client: LoraTrainingClient, name: string, overwrite: boolean): Promise<TinkerResult> {
    const path = statePath(claimed.client_id, name);
    const dir = await mkdtemp(join(tmpdir(), 'trainyard-tinker-'));
    try {
      const file = join(dir, 'state.safetensors');
      writeTrainingState(file, await client.exportState());
      const state = await this.store.putFile(file);
      await this.rpc
        .request(
          Subjects.training.tinker.storeState,
          { request_id: claimed.request_id, entity_id: claimed.entity_id, client_id: claimed.client_id, path, overwrite, base_model: claimed.base_model, lora_config: claimed.lora_config, state },
          { timeoutMs: 60_000 },
        )
        .catch(asUserError(ErrorCode.Conflict));
      return { path };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** load_state: a saved state of the caller's entity replaces the client's adapter (and, with `optimizer`, Adam's state). */
  private async loadState(claimed: ClaimedTinkerCall, client: LoraTrainingClient, path: string, optimizer: boolean): Promise<TinkerResult> {
    const scope = { entity_id: claimed.entity_id, entity_name: claimed.entity_name };
    const saved = await this.rpc.request(Subjects.training.tinker.getState, { ...scope, path }, { timeoutMs: 60_000 }).catch(asUserError(ErrorCode.NotFound));
    if (saved.base_model !== claimed.base_model) {
      throw new TinkerCallFailed(`${path} was saved from ${saved.base_model}; this training client trains ${claimed.base_model}`, 'User');
    }
    await this.cache.withFile(saved.sha256, async (file) => client.loadState(readTrainingState(file), { optimizer }));
    return { path };
  }

  /** The adapter, stored in the artifact store, becomes the next checkpoint of the client's registry model (exactly once: its id is the call's). */
  private async saveForSampler(claimed: ClaimedTinkerCall, client: LoraTrainingClient, name: string): Promise<TinkerResult> {
    const adapter_bundle = await this.adapters.write({ baseModel: claimed.base_model, spec: client.spec, tensors: await client.exportAdapter() });
    const checkpoint = await this.rpc.request(
      Subjects.registry.recordCheckpoint,
      {
        entity_id: claimed.entity_id,
        entity_name: claimed.entity_name,
        model_id: claimed.model_id,
        job_id: claimed.request_id,
        adapter_bundle,
        metrics: { 'tinker/optim_steps': client.step },
      },
      { timeoutMs: 60_000 },
    );
    return { path: samplerWeightsPath(claimed.client_id, name), checkpoint_step: checkpoint.step, model: `${claimed.model_name}:step${checkpoint.step}` };
  }

  /** The client this worker holds, or a fresh one for a client no call has touched yet. */
  private async clientFor(claimed: ClaimedTinkerCall): Promise<HeldClient> {
    const held = this.clients.get(claimed.client_id);
    if (held && held.appliedSeq === claimed.applied_seq) return held;
    if (held || claimed.applied_seq > 0) {
      this.drop(claimed.client_id);
      throw new TinkerCallFailed(
        `The training client ${claimed.client_id} lost its state (adapter, accumulated gradients and optimizer moments): this worker ` +
          `does not hold it as of call ${claimed.applied_seq}. Create a new training client, or load the last saved weights into one.`,
        'Server',
        true,
      );
    }
    const lm = await this.model(claimed);
    const spec = loraSpec(claimed.lora_config);
    const client = new LoraTrainingClient(lm, spec, undefined, { seed: claimed.lora_config.seed ?? 0, keptProductsBytes: this.config.KEPT_PRODUCTS_MB * 2 ** 20 });
    const fresh: HeldClient = { client, appliedSeq: 0, usedAt: Date.now() };
    this.clients.set(claimed.client_id, fresh);
    this.logger.log(`training client ${claimed.client_id}: rank ${spec.r} on ${claimed.base_model} (${spec.targetModules.join(', ')})`);
    return fresh;
  }

  private async model(claimed: ClaimedTinkerCall): Promise<LoadedModel> {
    const scope = { entity_id: claimed.entity_id, entity_name: claimed.entity_name };
    const { base_model_dir: dir, base_model_bundle: bundle } = await this.rpc.request(Subjects.registry.resolveModel, { ...scope, model: claimed.base_model });
    let lm = this.models.get(dir);
    if (!lm) {
      lm = await this.adapters.loadBaseModel({ dir, bundle }, (local) => loadModel(local, { matmulThreads: this.config.MATMUL_THREADS }));
      this.models.set(dir, lm);
      this.logger.log(`loaded ${dir} for Tinker training clients`);
    }
    return lm;
  }

  private dropIdle(now: number): void {
    for (const [id, held] of this.clients) {
      if (now - held.usedAt < CLIENT_IDLE_MS) continue;
      this.logger.log(`training client ${id}: idle for ${Math.round((now - held.usedAt) / 60_000)} min, dropped from memory`);
      this.drop(id);
    }
  }

  private drop(clientId: string): void {
    this.clients.get(clientId)?.client.dispose();
    this.clients.delete(clientId);
  }
}

/** A refusal of the orchestrator's with this code is the caller's error (category User), not a failure of ours. */
function asUserError(code: ErrorCode): (err: unknown) => never {
  return (err) => {
    if (err instanceof ServiceError && err.code === code) throw new TinkerCallFailed(err.message, 'User');
    throw err;
  };
}

const ATTENTION: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
const MLP: LoraTarget[] = ['gate_proj', 'up_proj', 'down_proj'];

/** The SDK's LoRA settings as our adapter's spec. The unembedding (train_unembed) has no adapter here: it stays frozen. */
export function loraSpec(config: TinkerLoraConfig): LoraSpec {
  const targetModules = [...(config.train_attn ? ATTENTION : []), ...(config.train_mlp ? MLP : [])];
  if (targetModules.length === 0) throw new TinkerCallFailed('lora_config trains nothing: train_attn and train_mlp are both false', 'User');
  return { r: config.rank, alpha: TINKER_LORA_ALPHA, targetModules };
}

function lossFunction(name: string): LossFunction {
  if (!(LOSS_FUNCTIONS as readonly string[]).includes(name)) throw new TinkerCallFailed(`loss_fn ${name} is not one of ${LOSS_FUNCTIONS.join(', ')}`, 'User');
  return name as LossFunction;
}

/** A Tinker datum as the engine's: its target_tokens and the loss's other inputs, one number per position. */
export function toTrainingDatum(datum: TinkerDatum, index: number): TrainingDatum {
  const { target_tokens: targets, ...rest } = datum.loss_fn_inputs;
  if (!targets) throw new InvalidTrainingInput(`data[${index}].loss_fn_inputs.target_tokens is missing`);
  return {
    inputTokens: datum.model_input,
    targetTokens: targets.values,
    lossInputs: Object.fromEntries(Object.entries(rest).map(([name, t]) => [name, t.values])),
  };
}
