/** Result of checking one component; the shape api.md gives for system-check entries. */
export interface ComponentCheck {
  ok: boolean;
  latency_ms: number;
  error: string | null;
  /** Anything else worth showing, e.g. the compute backend of workers. */
  [extra: string]: unknown;
}

/** A service's own view of its hard dependencies, answered on `<service>.health.check.v1`. */
export interface ServiceHealthReport {
  service: string;
  instance: string;
  ok: boolean;
  checks: Record<string, ComponentCheck>;
}

export type WorkerKind = 'inference' | 'training';

/** A WebGPU adapter as its driver describes it. */
export interface GpuAdapterReport {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  fallback: boolean;
}

/** What a worker says about itself when pinged. */
export interface WorkerAnnouncement {
  kind: WorkerKind;
  instance: string;
  /** tfjs backend actually in use: tensorflow, webgpu, wasm or cpu. */
  backend: string;
  gpu: boolean;
  /** webgpu only: the adapter in use; a fallback (software) adapter is not a GPU. */
  adapter?: GpuAdapterReport | null;
  ready: boolean;
  started_at: string;
  /** Sequences it can decode at once, and how many it is decoding now. */
  capacity: { slots: number; active: number };
}

/** GET /v1/system-check: every component, and which are failing. */
export interface SystemCheckReport {
  status: 'ok' | 'failing';
  failing: string[];
  components: Record<string, ComponentCheck>;
}

/** Components the system-check always reports, in display order. */
export const SYSTEM_COMPONENTS = [
  'api',
  'database',
  'nats',
  'health',
  'chat',
  'model-registry',
  'training-orchestrator',
  'inference-queue',
  'training-queue',
  'inference-workers',
  'training-workers',
] as const;

export type SystemComponent = (typeof SYSTEM_COMPONENTS)[number];
