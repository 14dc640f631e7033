import { DynamicModule, Inject, Injectable, Logger, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { GpuAdapterReport, Subjects, WorkerAnnouncement } from '@trainyard/contracts';
import { EventSubscription, MessageBus } from '@trainyard/messaging';
import { ReadinessService } from './health/readiness.service';

const ANNOUNCEMENT = Symbol('ANNOUNCEMENT');
const PRESENCE_OPTIONS = Symbol('PRESENCE_OPTIONS');

/** The worker's live load, updated by whatever does its work; reported in every ping reply. */
@Injectable()
export class WorkerLoad {
  slots = 1;
  active = 0;
}

/**
 * Lets system-check find every worker: each replica answers the workers ping (no queue
 * group, so all of them do) with its kind, instance and compute backend.
 */
@Injectable()
class WorkerPresence implements OnModuleInit, OnModuleDestroy {
  private subscription?: EventSubscription;

  constructor(
    private readonly bus: MessageBus,
    @Inject(ANNOUNCEMENT) private readonly announcement: StaticAnnouncement,
    @Inject(PRESENCE_OPTIONS) private readonly options: WorkerPresenceOptions,
    private readonly readiness: ReadinessService,
    private readonly load: WorkerLoad,
  ) {}

  onModuleInit(): void {
    const { backend, gpu, adapter = null } = this.announcement;
    const shown = adapter ? `, adapter: ${describeAdapter(adapter)}` : '';
    new Logger(`${this.announcement.kind}-worker`).log(`compute backend: ${backend}, gpu: ${gpu}${shown}`);
    this.readiness.register('compute', async () => {
      if (this.options.requireGpu && !gpu) {
        throw new Error(`REQUIRE_GPU is set but the ${backend} backend has no GPU (${missingGpuHint(backend, adapter)})`);
      }
      return { backend, gpu, adapter };
    });
    this.subscription = this.bus.respond(Subjects.workers.ping, async (): Promise<WorkerAnnouncement> => {
      const { ok } = await this.readiness.report(1_000);
      const capacity = { slots: this.load.slots, active: this.load.active };
      return { ...this.announcement, ready: ok, capacity };
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }
}

type StaticAnnouncement = Omit<WorkerAnnouncement, 'ready' | 'capacity'>;

/** "nvidia hopper (NVIDIA H100 80GB HBM3)", "mesa software (llvmpipe ...), fallback adapter". */
function describeAdapter(adapter: GpuAdapterReport): string {
  const name = [adapter.vendor, adapter.architecture].filter(Boolean).join(' ') || 'unknown adapter';
  const detail = adapter.description || adapter.device;
  return `${name}${detail ? ` (${detail})` : ''}${adapter.fallback ? ', fallback adapter' : ''}`;
}

function missingGpuHint(backend: string, adapter: GpuAdapterReport | null): string {
  if (backend === 'webgpu' && adapter) return `its adapter is ${describeAdapter(adapter)}: is the GPU's Vulkan driver visible?`;
  if (backend === 'tensorflow') return 'is CUDA 11.x with cuDNN 8 visible?';
  return 'set COMPUTE_BACKEND to tensorflow or webgpu on a GPU machine';
}

export interface WorkerPresenceOptions {
  /** Readiness fails (probe "compute") unless the backend runs on a GPU. */
  requireGpu?: boolean;
}

@Module({})
export class WorkerPresenceModule {
  static forRoot(announcement: StaticAnnouncement, options: WorkerPresenceOptions = {}): DynamicModule {
    return {
      module: WorkerPresenceModule,
      global: true,
      providers: [
        { provide: ANNOUNCEMENT, useValue: announcement },
        { provide: PRESENCE_OPTIONS, useValue: options },
        WorkerLoad,
        WorkerPresence,
      ],
      exports: [WorkerLoad],
    };
  }
}
