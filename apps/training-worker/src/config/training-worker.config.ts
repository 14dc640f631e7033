import { withArtifactCache } from '@trainyard/artifacts';
import { KEPT_PRODUCTS_BYTES } from '@trainyard/engine';
import { WorkerConfig } from '@trainyard/runtime';
import { Type } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

/** With the artifact store's settings and the worker's local cache of it (ARTIFACT_CACHE_DIR, ARTIFACT_CACHE_MB). */
export class TrainingWorkerConfig extends withArtifactCache(WorkerConfig) {
  override HTTP_PORT = 3106;

  /**
   * Threads every frozen projection of a training step is divided between (its forward
   * product and its input gradient, with its LoRA adapters), over one copy of the weights. 1
   * (the default) trains on one core; set the cores the worker may use to train each step on
   * all of them (docs/benchmarks.md, "Training step").
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(64)
  MATMUL_THREADS = 1;

  /**
   * Memory (MiB) a training step may use to keep its frozen projections' and attention's
   * outputs and its lm_head's softmax from the forward pass, so that the backward does not
   * compute them again. A SmolLM2-135M step of 2,048 tokens keeps nearly all of them within
   * the default and takes 16-22 % less time than with 256 (docs/benchmarks.md, "Training
   * step"); 0 recomputes every product. Lower it for a model that leaves the worker little
   * memory.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(65536)
  KEPT_PRODUCTS_MB = KEPT_PRODUCTS_BYTES / 2 ** 20;
}
