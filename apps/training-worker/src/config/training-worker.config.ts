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
   * Memory (MiB) a training step may use to keep from its forward pass for the backward: the
   * blocks' activations, so that the forward runs once, where they fit; else the frozen
   * projections' and attention's outputs for the recompute; then the lm_head's softmax
   * (docs/benchmarks.md, "Training step"). Within the default a SmolLM2-135M step of up to
   * about 1,700 tokens runs its forward once, and one of 2,048 keeps nearly every output; 0
   * recomputes every block and product. Raise it on a GPU with memory to spare; lower it for a
   * model that leaves the worker little memory.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(65536)
  KEPT_PRODUCTS_MB = KEPT_PRODUCTS_BYTES / 2 ** 20;
}
