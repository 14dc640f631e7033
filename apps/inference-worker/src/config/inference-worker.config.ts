import { ONE_ROW_TILE_SETTINGS, OneRowTileSetting, READ_AHEAD_SETTINGS, ReadAheadSetting, WEIGHTS_SETTINGS, WeightsSetting } from '@trainyard/engine';
import { withArtifactCache } from '@trainyard/artifacts';
import { booleanSetting, WorkerConfig } from '@trainyard/runtime';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, Max, Min } from 'class-validator';

/** With the artifact store's settings and the worker's local cache of it (ARTIFACT_CACHE_DIR, ARTIFACT_CACHE_MB). */
export class InferenceWorkerConfig extends withArtifactCache(WorkerConfig) {
  override HTTP_PORT = 3105;

  /** Sequences decoded together in one forward step (n > 1 counts each choice). */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(256)
  MAX_BATCH_SEQUENCES = 8;

  /**
   * Steps a batch decodes before its tokens are read back, where they can stay on the GPU
   * between steps (webgpu, every sequence drawn on the device): each step is
   * fed the tokens the one before drew there, so the host records a step while the GPU runs
   * the last. A sequence that ends within a run still takes the run's remaining steps, and
   * streams its tokens a run at a time; a run of one step is taken while a prompt waits to
   * join. 1: a readback every step.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(64)
  DECODE_RUN_STEPS = 4;

  /**
   * Whether a batch's next run of DECODE_RUN_STEPS steps is recorded and submitted before the
   * last run's tokens are read back, fed the tokens that run drew on the GPU
   * (DecodeBatch.stepsDrawnAfter), so that the GPU goes from one run to the next while the host
   * reads and streams the last: only while no sequence has joined or left since the last run and
   * none is sure to reach its max_tokens within it. A sequence that ends within a run has the
   * next run's steps taken for it too, their tokens dropped.
   */
  @Transform(booleanSetting)
  @IsBoolean()
  DECODE_RUN_AHEAD = true;

  /** Base models kept loaded; the least recently used is unloaded beyond this. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MAX_LOADED_MODELS = 2;

  /** LoRA adapters kept loaded (small: a few MB each for small models). */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  MAX_LOADED_ADAPTERS = 16;

  /**
   * Memory for the keys and values of recently prefilled prompts (MiB), so that a prompt
   * sharing its beginning with one of them (n > 1, an RL group, a conversation's next turn)
   * is prefilled only from where they differ. 0 turns prompt reuse off.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  PROMPT_CACHE_MB = 256;

  /**
   * Whether the matmul kernel reads each group of weights into cache before multiplying it:
   * faster on machines whose cores stream memory slowly while they compute (an Intel Xeon),
   * a cost where they stream well. 'auto' times both on each large model as it loads (with
   * MATMUL_ONE_ROW_TILE), once per shape and weights format, and the model keeps the faster;
   * 'on' or 'off' skips the timing.
   */
  @IsIn(READ_AHEAD_SETTINGS)
  MATMUL_READ_AHEAD: ReadAheadSetting = 'auto';

  /**
   * How the matmul kernel runs one sequence's decode step: down one panel of weights at a
   * time ('narrow': faster on AMD Zen 4) or four ('wide': faster on an Intel Xeon), or with
   * the weights in pairs of panels ('paired'), which one sequence streams as one run: faster
   * for one sequence, a little slower for batches of 4 and more (the same outputs to the
   * bit). 'auto' times all three with MATMUL_READ_AHEAD's timing and keeps the weights in
   * pairs where they speed one sequence up more than they slow a batch of 4 down (bf16
   * weights on AMD Zen 4 and Zen 5; 0.85 s of timing for SmolLM2-135M on a Zen 4); the
   * others fix the layout and skip that timing.
   */
  @IsIn(ONE_ROW_TILE_SETTINGS)
  MATMUL_ONE_ROW_TILE: OneRowTileSetting = 'auto';

  /**
   * Threads every projection is divided between, over one copy of the weights. 1 (the
   * default) suits one worker per core, as `npm start` runs them: the most streams per
   * machine. A single worker with MATMUL_THREADS set to the machine's cores decodes each
   * stream faster and 8 streams at about the same total (docs/deploy.md, "Inference workers
   * and threads").
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(64)
  MATMUL_THREADS = 1;

  /**
   * How the loaded models' weights are held: 'checkpoint' (the default) as the checkpoint
   * stores them (f32, or bf16), or 'q8', quantized to 8 bits at load (blocks of 32 with one
   * scale, the Q8_0 layout): a quarter of the f32 memory and faster decoding, but logits and
   * the logprobs returned to the trainer differ slightly from the f32 model's
   * (docs/benchmarks.md, "8-bit weights"). Training workers are not affected. q8 is the wasm
   * kernel's: a webgpu worker holds the checkpoint's weights (a bf16 or f16 one in its 16 bits).
   */
  @IsIn(WEIGHTS_SETTINGS)
  WEIGHTS: WeightsSetting = 'checkpoint';
}
