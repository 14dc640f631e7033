import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { rlTrainingGroups } from '@trainyard/art';
import {
  ClaimedJob,
  ErrorCode,
  JobProgress,
  JobProgressReply,
  RlJobPayload,
  ServiceError,
  Subjects,
  TrainingKlReference,
  TrainingTrajectoryGroup,
} from '@trainyard/contracts';
import { LoadedModel, loadModel, LoraTrainer, matMulThreads, OnStep, PeftAdapter, StepMetrics } from '@trainyard/engine';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { AdapterArtifacts } from './adapter-artifacts';
import { rlNoStepsReason, sftNoStepsReason } from './no-steps-reason';
import { planRlJob, rlJobMetrics } from './rl-plan';
import { epochConfig, sftEpochs } from './sft-epochs';

/** Attempts at a progress report whose answer is lost, and the pause between them. */
const PROGRESS_ATTEMPTS = 3;
const PROGRESS_RETRY_MS = 500;

/** Why a job stopped early: a user's cancel, or this worker shutting down (the job is redelivered). */
export class JobInterrupted extends Error {
  constructor(readonly reason: 'cancelled' | 'shutdown') {
    super(`training ${reason}`);
  }
}

/**
 * Trains one claimed job: the base model plus the model's newest adapter, RL or SFT, each
 * gradient step reported as it happens; then the new adapter is recorded by the registry
 * (exactly once per job) and its step returned.
 */
@Injectable()
export class JobRunner implements OnModuleDestroy {
  private readonly logger = new Logger(JobRunner.name);
  /** The last base model loaded: consecutive jobs of one model skip the load. */
  private loaded?: LoadedModel;
  /** The directory the registry named for it (its files may have come from the artifact store). */
  private loadedFrom?: string;

  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    @Inject(TrainingWorkerConfig) private readonly config: TrainingWorkerConfig,
    private readonly adapters: AdapterArtifacts,
  ) {}

  onModuleDestroy(): void {
    this.loaded?.dispose();
    this.loaded = undefined;
  }

  async run(job: ClaimedJob, signal: AbortSignal, onCancelRequested: () => void): Promise<number> {
    const payload = await this.blobs.takeJson(job.payload);
    const scope = { entity_id: job.entity_id, entity_name: job.entity_name };
    const source = await this.rpc.request(Subjects.registry.resolveModel, { ...scope, model: job.model_name });
    if (!source.adapter_bundle) throw new Error(`${job.model_name} resolved to no adapter`);
    const lm = await this.model(source.base_model_dir, source.base_model_bundle);
    const current = await this.adapters.read(source.adapter_bundle, lm.config);
    const trainer = new LoraTrainer(lm, current.spec, current.tensors, { keptProductsBytes: this.config.KEPT_PRODUCTS_MB * 2 ** 20 });
    try {
      const report = async (kind: 'started', num_sequences: number, no_gradient_steps_reason: string | null) => {
        const reply = await this.reportProgress({ job_id: job.job_id, kind, num_sequences, no_gradient_steps_reason });
        if (reply.cancel_requested) onCancelRequested();
      };
      const steps: StepMetrics[] = [];
      const onStep: OnStep = async (metrics, step) => {
        steps.push(metrics);
        const reply = await this.reportProgress({ job_id: job.job_id, kind: 'step', step, metrics });
        if (reply.cancel_requested) onCancelRequested();
      };
      // The payload holds the job validated and resolved by the orchestrator: an RL job's groups
      // are planned here into the trainer's token sequences (rl-plan.ts), an SFT job's
      // conversations go to the trainer as they are.
      if (payload.type === 'rl') {
        const plan = planRlJob(lm, await this.rlGroups(payload), payload.settings);
        await report('started', plan.numSequences, rlNoStepsReason(plan));
        const referenceAdapter = payload.kl_reference ? await this.klReference(job, scope, payload.kl_reference, source.step ?? 0, lm) : undefined;
        // Each step reports the trainer's metrics and the job's rewards (reward, num_trajectories...).
        const onRlStep: OnStep = (metrics, step, numSteps) => onStep({ ...metrics, ...rlJobMetrics(plan) }, step, numSteps);
        await trainer.trainRl(plan, payload.settings, onRlStep, signal, { referenceAdapter });
      } else {
        const { settings } = payload;
        const epochs = sftEpochs(payload.conversations, payload.epochs ?? 1, payload.shuffle_seed);
        const perEpoch = trainer.planSft(epochs[0], settings).numSequences;
        const numSequences = perEpoch * epochs.length;
        await report('started', numSequences, sftNoStepsReason(numSequences));
        const validation = payload.validation_conversations ?? [];
        for (const [epoch, conversations] of epochs.entries()) {
          const first = epoch * perEpoch;
          // The loss on the validation file after each epoch's last step, reported with that step.
          const onEpochStep: OnStep = async (metrics, step) => {
            const measured = step === perEpoch && validation.length > 0 ? { ...metrics, valid_loss: await trainer.sftLoss(validation) } : metrics;
            await onStep(measured, first + step, numSequences);
          };
          await trainer.trainSft(conversations, epochConfig(settings, first, perEpoch), onEpochStep, signal);
        }
      }
      if (signal.aborted) throw signal.reason;
      const adapter = { baseModel: source.base_model, spec: current.spec, tensors: await trainer.exportAdapter() };
      return await this.record(job, scope, adapter, checkpointMetrics(steps));
    } finally {
      trainer.dispose();
    }
  }

  /**
   * An RL job's groups for the trainer: read by digest from the artifact store (version 3) and
   * mapped as the orchestrator validated them, or held in the payload (version 2, stored before).
   */
  private async rlGroups(payload: RlJobPayload): Promise<TrainingTrajectoryGroup[]> {
    if (payload.version === 2) return payload.groups;
    const raw = await this.adapters.readJson(payload.trajectory_groups.sha256);
    const { groups, issues } = rlTrainingGroups(raw, payload.settings);
    if (issues.length > 0) throw new Error(`the job's trajectory groups no longer validate: ${issues[0].path} ${issues[0].message}`);
    return groups;
  }

  /**
   * The KL penalty's reference adapter: a checkpoint of the job's model (a step, or a number of
   * steps before `step`, the one this job trains from) or one named in full. Resolved with the
   * job's own scope, it can never be another entity's adapter or any other file.
   */
  private async klReference(
    job: ClaimedJob,
    scope: { entity_id: string; entity_name: string },
    reference: TrainingKlReference,
    step: number,
    lm: LoadedModel,
  ): Promise<{ spec: PeftAdapter['spec']; tensors: PeftAdapter['tensors'] }> {
    const name =
      'model' in reference ? reference.model : `${job.model_name}:step${'step' in reference ? reference.step : Math.max(0, step - reference.steps_back)}`;
    const bundle = (await this.rpc.request(Subjects.registry.resolveModel, { ...scope, model: name })).adapter_bundle;
    if (!bundle) throw new Error(`the KL reference ${name} has no adapter`);
    const adapter = await this.adapters.read(bundle, lm.config);
    return { spec: adapter.spec, tensors: adapter.tensors };
  }

  private async record(job: ClaimedJob, scope: { entity_id: string; entity_name: string }, adapter: PeftAdapter, metrics: Record<string, number>): Promise<number> {
    const adapter_bundle = await this.adapters.write(adapter);
    const checkpoint = await this.rpc.request(
      Subjects.registry.recordCheckpoint,
      { ...scope, model_id: job.model_id, job_id: job.job_id, adapter_bundle, metrics },
      { timeoutMs: 60_000 },
    );
    this.logger.log(`job ${job.job_id}: checkpoint step ${checkpoint.step} recorded`);
    return checkpoint.step;
  }

  /**
   * A progress report, asked again when its answer was lost (the NATS server the request went
   * through died, or the orchestrator is failing over): the orchestrator stores each report once
   * (by its kind and step), so a report repeated is harmless, while giving up puts the whole
   * job back to run again from its start.
   */
  private async reportProgress(progress: JobProgress): Promise<JobProgressReply> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.rpc.request(Subjects.training.reportProgress, progress);
      } catch (err) {
        const lost = err instanceof ServiceError && (err.code === ErrorCode.Timeout || err.code === ErrorCode.Unavailable);
        if (!lost || attempt === PROGRESS_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, PROGRESS_RETRY_MS));
      }
    }
  }

  private async model(dir: string, bundle: string | null): Promise<LoadedModel> {
    if (this.loaded && this.loadedFrom === dir) return this.loaded;
    this.loaded?.dispose();
    this.loaded = undefined;
    this.loaded = await this.adapters.loadBaseModel({ dir, bundle }, (local) => loadModel(local, { matmulThreads: this.config.MATMUL_THREADS }));
    this.loadedFrom = dir;
    this.logger.log(`loaded ${dir}; matmul on ${matMulThreads()} thread${matMulThreads() === 1 ? '' : 's'}`);
    return this.loaded;
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof ServiceError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * What the new checkpoint carries from the job that made it: the mean over its gradient steps
 * of each step metric, as "training/<name>" (the client's own POST .../log metrics are
 * "<split>/<name>", e.g. "train/reward", and are added to the same map later).
 */
export function checkpointMetrics(steps: StepMetrics[]): Record<string, number> {
  const sums = new Map<string, { sum: number; count: number }>();
  for (const metrics of steps) {
    for (const [name, value] of Object.entries(metrics)) {
      if (!Number.isFinite(value)) continue;
      const entry = sums.get(name) ?? { sum: 0, count: 0 };
      entry.sum += value;
      entry.count++;
      sums.set(name, entry);
    }
  }
  return Object.fromEntries([...sums].map(([name, { sum, count }]) => [`training/${name}`, sum / count]));
}
