import 'reflect-metadata';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, registerDecorator, ValidationArguments } from 'class-validator';
import { hostname } from 'node:os';

/** class-transformer's reading of a boolean setting from the environment: true, 1 or yes (any case) is true, any other string false. */
export const booleanSetting = ({ value }: { value: unknown }) => (typeof value === 'string' ? ['true', '1', 'yes'].includes(value.trim().toLowerCase()) : value);

/** For `@Transform`: a comma-separated setting as a list of its trimmed, non-empty entries. */
export const splitList = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value;

/** Settings every process shares. Apps extend this with their own. */
export class BaseServiceConfig {
  /** NATS servers, comma-separated. */
  @Transform(splitList)
  @Matches(/^(nats|tls|ws|wss):\/\/[^\s]+$/, { each: true, message: 'must be a list of nats:// URLs' })
  NATS_URL: string[] = ['nats://127.0.0.1:4222'];

  /** Port of the process's own /health/live and /health/ready. */
  @IsInt()
  @Min(0)
  @Max(65535)
  @Type(() => Number)
  HTTP_PORT!: number;

  @IsString()
  HTTP_HOST = '0.0.0.0';

  @IsIn(['error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL: 'error' | 'warn' | 'log' | 'debug' | 'verbose' = 'log';

  /** Default time a NATS request may take before it fails with a timeout. */
  @IsInt()
  @Min(50)
  @Type(() => Number)
  RPC_TIMEOUT_MS = 10_000;

  /** Prefix of JetStream stream names and work subjects; lets tests share a nats-server. */
  @Matches(/^[a-z0-9_]*$/i, { message: 'must be letters, digits or underscores' })
  JETSTREAM_PREFIX = '';

  /**
   * Servers of the NATS cluster that each keep a copy of every work queue and blob bucket:
   * 1 on one server, 3 on a three-server cluster (a queue then survives the loss of one).
   */
  @IsInt()
  @Min(1)
  @Max(5)
  @Type(() => Number)
  JETSTREAM_REPLICAS = 1;

  /**
   * On SIGTERM, how long work in progress (HTTP and NATS requests, completions being
   * generated) may take to finish; past it, what is left is failed clearly or handed back.
   */
  @IsInt()
  @Min(0)
  @LessThan('SHUTDOWN_TIMEOUT_MS')
  @Type(() => Number)
  SHUTDOWN_DRAIN_MS = 20_000;

  /** Hard bound on a shutdown: a process still running this long after SIGTERM exits with code 1. */
  @IsInt()
  @Min(1_000)
  @Type(() => Number)
  SHUTDOWN_TIMEOUT_MS = 25_000;

  /** Name of this replica in health reports. */
  @IsOptional()
  @IsString()
  INSTANCE_ID = `${hostname()}-${process.pid}`;
}

/** The value must be below that of another setting of the same config. */
function LessThan(other: string): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'lessThan',
      target: target.constructor,
      propertyName: String(propertyName),
      constraints: [other],
      options: { message: `must be less than ${other}` },
      validator: {
        validate: (value: unknown, args: ValidationArguments) => typeof value === 'number' && value < Number((args.object as Record<string, unknown>)[other]),
      },
    });
}

export const DATABASE_URL_PATTERN = /^postgres(ql)?:\/\/[^\s]+$/;

/** Settings of the GPU worker apps. */
export class WorkerConfig extends BaseServiceConfig {
  /**
   * tfjs backend: auto picks tensorflow when it loads and sees a GPU, else webgpu on a
   * hardware adapter, else wasm, else cpu. webgpu names Dawn over Vulkan and takes whatever
   * adapter there is, a software one included.
   */
  @IsIn(['auto', 'tensorflow', 'webgpu', 'wasm', 'cpu'])
  COMPUTE_BACKEND: 'auto' | 'tensorflow' | 'webgpu' | 'wasm' | 'cpu' = 'auto';

  /**
   * On webgpu, the engine's fused WGSL kernels (RMSNorm, RoPE, decode attention, sampling on
   * the GPU); off runs the generic tfjs ops instead. No effect on other backends.
   */
  @IsIn(['on', 'off'])
  WEBGPU_FUSED_KERNELS: 'on' | 'off' = 'on';

  /**
   * On webgpu, training's tiled products and a prompt's products on tensor cores (subgroup
   * matrices of f16, f32 results) where the adapter offers them and their products agree with
   * the f32 tiles' at start; off (the default) keeps every product in f32.
   */
  @IsIn(['on', 'off'])
  WEBGPU_TENSOR_CORES: 'on' | 'off' = 'off';

  /**
   * On webgpu, the most megabytes of freed GPU buffers kept for reuse by tensors of the same
   * size; past it the least recently used are destroyed. Without a bound, tensors whose sizes
   * keep changing (a growing KV cache, RL batches of other lengths) hold the GPU's memory.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  WEBGPU_BUFFER_POOL_MB = 2048;

  /**
   * Set in the GPU images: tfjs-node-gpu silently runs on the CPU when CUDA or cuDNN is
   * missing, and webgpu may find only a software adapter, so a worker meant for a GPU reports
   * not-ready instead of serving slowly.
   */
  @Transform(booleanSetting)
  @IsBoolean()
  REQUIRE_GPU = false;
}
