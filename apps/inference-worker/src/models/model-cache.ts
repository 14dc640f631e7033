import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ArtifactCache, withModelFiles } from '@trainyard/artifacts';
import { describeMatMulPlan, LoadedModel, loadModel, matMulThreads } from '@trainyard/engine';
import { InferenceWorkerConfig } from '../config/inference-worker.config';

/**
 * Loaded base models by directory, least recently used first out, but never one that a
 * running completion still holds. Concurrent requests for the same model share one load.
 */
@Injectable()
export class ModelCache implements OnModuleDestroy {
  private readonly logger = new Logger(ModelCache.name);
  private readonly models = new Map<string, Promise<LoadedModel>>();
  private readonly holders = new Map<string, number>();
  private readonly unloadListeners: ((model: LoadedModel) => void)[] = [];

  constructor(
    @Inject(InferenceWorkerConfig) private readonly config: InferenceWorkerConfig,
    private readonly files: ArtifactCache,
  ) {}

  /**
   * The model, held until release(dir) is called once for every acquire. `dir` names it; with
   * BASE_MODEL_SOURCE=store its files come from the artifact store when it is there (`bundle`).
   */
  acquire(dir: string, bundle?: string | null): Promise<LoadedModel> {
    this.holders.set(dir, (this.holders.get(dir) ?? 0) + 1);
    let model = this.models.get(dir);
    if (model) {
      this.models.delete(dir);
    } else {
      this.logger.log(`loading ${dir}`);
      const { MATMUL_READ_AHEAD: readAhead, MATMUL_ONE_ROW_TILE: oneRowTile, MATMUL_THREADS: matmulThreads, WEIGHTS: weights } = this.config;
      const options = { inferenceOnly: true, readAhead, oneRowTile, matmulThreads, weights };
      model = withModelFiles(this.files, this.config.BASE_MODEL_SOURCE, { dir, bundle }, (local) => loadModel(local, options));
      model.then(
        (loaded) => this.logger.log(`loaded ${dir}; weights ${weights}, matmul ${describeMatMulPlan(loaded.model.matmulPlan)}, on ${matMulThreads()} thread${matMulThreads() === 1 ? '' : 's'}`),
        () => this.models.delete(dir),
      );
    }
    this.models.set(dir, model);
    this.evict(dir);
    return model;
  }

  /** Calls `listener` with each model just before it is unloaded (to drop what was kept for it). */
  onUnload(listener: (model: LoadedModel) => void): void {
    this.unloadListeners.push(listener);
  }

  /** Unloads the least recently used models beyond the limit, never the one just asked for. */
  private evict(keep: string): void {
    for (const dir of this.models.keys()) {
      if (this.models.size <= this.config.MAX_LOADED_MODELS) return;
      if (dir === keep || (this.holders.get(dir) ?? 0) > 0) continue;
      const model = this.models.get(dir);
      this.models.delete(dir);
      model?.then((m) => this.unload(m), () => undefined);
    }
  }

  release(dir: string): void {
    const count = (this.holders.get(dir) ?? 1) - 1;
    if (count > 0) this.holders.set(dir, count);
    else this.holders.delete(dir);
  }

  async onModuleDestroy(): Promise<void> {
    for (const model of this.models.values()) await model.then((m) => this.unload(m), () => undefined);
    this.models.clear();
  }

  private unload(model: LoadedModel): void {
    for (const listener of this.unloadListeners) listener(model);
    model.dispose();
  }
}
