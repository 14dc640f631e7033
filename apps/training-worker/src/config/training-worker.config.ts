import { WorkerConfig } from '@trainyard/runtime';
import { Type } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

export class TrainingWorkerConfig extends WorkerConfig {
  override HTTP_PORT = 3106;

  /**
   * Threads every frozen projection of a training step is divided between (its forward
   * product and its input gradient), over one copy of the weights. 1 (the default) trains on
   * one core; set the cores the worker may use to train each step on all of them
   * (docs/benchmarks.md, "Training step"). LoRA's own small products stay on one thread.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(64)
  MATMUL_THREADS = 1;
}
