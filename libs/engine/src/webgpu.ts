/// <reference types="@webgpu/types" />
import { createRequire } from 'node:module';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { paceDawnPolling } from './dawn-polling';
import { GpuFault, readChecked, watchGpuFaults, whenLost } from './gpu-faults';
import { matrixTileFits, SubgroupMatrices, useSubgroupMatrices } from './kernels/tiled-product.wgsl';
import { cacheBindGroups } from './webgpu-bind-groups';

/** What the WebGPU adapter says about itself (GPUAdapterInfo, plus whether it is a software fallback). */
export interface GpuAdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A fallback adapter (such as Mesa's lavapipe, Vulkan on the CPU) is never taken for a GPU. */
  fallback: boolean;
}

/** The part of the WebGPU API this file uses; the full types live in @webgpu/types. */
interface GpuAdapter {
  info?: Partial<Omit<GpuAdapterInfo, 'fallback'>> & { isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
}
interface Gpu {
  requestAdapter(options?: { powerPreference?: 'low-power' | 'high-performance' }): Promise<GpuAdapter | null>;
}
interface DawnBinding {
  create(flags: string[]): Gpu;
  globals: Record<string, unknown>;
}

/**
 * Puts Dawn's WebGPU implementation (the `webgpu` package's prebuilt dawn.node) on
 * `globalThis.navigator.gpu`, with the GPU* classes as globals, as a browser has them.
 * `@tensorflow/tfjs-backend-webgpu` registers its backend only if `navigator.gpu` exists
 * when it is first imported, so this runs before that import. The `webgpu` package's own
 * entry is an ES module, which neither jest nor the CommonJS bundles of the apps can load;
 * the native addon it wraps is loaded here directly. Dawn's polling while it waits for the GPU
 * is paced from here on (dawn-polling.ts). `flags` are Dawn's instance flags (the `webgpu`
 * package's `create`), of the first call in the process only: `backend=null` puts Dawn's null
 * backend there, which records every call and runs nothing (tools/bench/gpu/host.bench.ts).
 */
export function installNavigatorGpu(flags: string[] = []): Gpu {
  const { create, globals } = dawnBinding();
  paceDawnPolling();
  // The GPU* globals first, always: Node 21 and later have a process-wide `navigator`, so its
  // `gpu` may have been set from another context (a jest test file) that this one's globals
  // do not see.
  installGlobals(globals);
  const nav = (globalThis as { navigator?: { gpu?: Gpu } }).navigator;
  if (nav?.gpu) return nav.gpu;
  const gpu = create(flags);
  if (nav) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  return gpu;
}

/** A subgroup matrix configuration an adapter offers (Dawn's experimental route to tensor cores: cooperative matrices on Vulkan). */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/**
 * The features the high-performance adapter offers, Dawn's experimental ones included, and its
 * subgroup matrix configurations: what a product could use beyond core WebGPU (for benches; the
 * engine's device asks for none of the experimental ones). An instance of its own, with Dawn's
 * unsafe APIs allowed, since without them Dawn lists no experimental feature.
 */
export async function adapterFeatures(): Promise<{ features: string[]; subgroupMatrixConfigs: SubgroupMatrixConfig[] } | null> {
  const gpu = dawnInstance(['enable-dawn-features=allow_unsafe_apis']);
  const adapter = (await gpu.requestAdapter({ powerPreference: 'high-performance' })) as { features: Set<string>; info?: { subgroupMatrixConfigs?: SubgroupMatrixConfig[] } } | null;
  if (!adapter) return null;
  return { features: [...adapter.features].sort(), subgroupMatrixConfigs: adapter.info?.subgroupMatrixConfigs ?? [] };
}

/**
 * A Dawn instance of its own with instance `flags`, apart from navigator.gpu's (its GPU* globals
 * installed): `backend=null` gives one whose devices validate every call and run none, so that
 * WGSL for features no local adapter has can be compiled (test/subgroup-matrix.spec.ts).
 */
export function dawnInstance(flags: string[]): GPU {
  const { create, globals } = dawnBinding();
  installGlobals(globals);
  const gpu = create(flags) as unknown as GPU;
  // Kept for the process's life, as navigator.gpu's instance is: Dawn can abort the process
  // when an instance is collected while its device's threads still run (seen under jest).
  const kept = globalThis as unknown as { dawnInstances?: GPU[] };
  (kept.dawnInstances ??= []).push(gpu);
  return gpu;
}

/** Dawn's GPU* classes as globals, where this context has none yet. */
function installGlobals(globals: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(globals)) {
    if (!(name in globalThis)) Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  }
}

function dawnBinding(): DawnBinding {
  // Node's own require, which a bundler leaves alone: the addon is found in node_modules at run time.
  const load = createRequire(__filename);
  const root = path.dirname(load.resolve('webgpu/package.json'));
  const platform = process.platform === 'darwin' ? 'darwin-universal' : `${process.platform}-${process.arch}`;
  return load(path.join(root, 'dist', platform, 'dawn.node')) as DawnBinding;
}

/**
 * The adapter tfjs's webgpu backend will get: it asks for the high-performance one, as here.
 * Null when there is none (no Vulkan loader, or no driver for any device).
 */
export async function requestAdapterInfo(gpu: Gpu): Promise<GpuAdapterInfo | null> {
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return null;
  const info = adapter.info ?? {};
  return {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    fallback: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
  };
}

/** The limits tfjs's webgpu backend asks of the adapter for its device; the engine's device asks them too. */
const TFJS_LIMITS = [
  'maxComputeWorkgroupStorageSize',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupSizeX',
  'maxComputeInvocationsPerWorkgroup',
] as const;

/** The features a device needs for subgroup matrices of f16 (Dawn lists the experimental one only with its unsafe APIs allowed). */
const SUBGROUP_MATRIX_FEATURES = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];

let tensorCores = false;

/**
 * Whether the engine's webgpu device is to multiply on tensor cores where the adapter offers
 * them (WEBGPU_TENSOR_CORES): subgroup matrices of f16 with f32 results, for the training
 * steps' tiled products (kernels/tiled-product.wgsl.ts) and a prompt's in the decoding step. Set before the backend starts; off by
 * default, since f16 operands round (and overflow past 65504) where the f32 tiles do not.
 */
export function setTensorCores(on: boolean): void {
  tensorCores = on;
}

/** Dawn's instance flags for installNavigatorGpu: its unsafe APIs allowed where tensor cores are asked for. */
export function dawnFlags(): string[] {
  return tensorCores ? ['enable-dawn-features=allow_unsafe_apis'] : [];
}

/**
 * The subgroup matrices the engine takes on `adapter`: its first configuration (the driver's
 * preferred) of f16 operands and f32 results that tiles the matrix tile, where it offers the
 * features and runs every subgroup at one size; else null.
 */
function subgroupMatricesOf(adapter: GPUAdapter): SubgroupMatrices | null {
  if (!SUBGROUP_MATRIX_FEATURES.every((feature) => adapter.features.has(feature))) return null;
  const info = (adapter as { info?: { subgroupMinSize?: number; subgroupMaxSize?: number; subgroupMatrixConfigs?: SubgroupMatrixConfig[] } }).info ?? {};
  const subgroupSize = info.subgroupMaxSize;
  if (!subgroupSize || info.subgroupMinSize !== subgroupSize) return null;
  const shapes = (info.subgroupMatrixConfigs ?? []).filter((c) => c.componentType === 'f16' && c.resultComponentType === 'f32').map(({ M, N, K }) => ({ M, N, K, subgroupSize }));
  return shapes.find(matrixTileFits) ?? null;
}

let reportLost: (fault: GpuFault) => void = () => undefined;
const lost = new Promise<GpuFault>((resolve) => (reportLost = resolve));

/**
 * Resolves when the device of the engine's webgpu backend is lost (a driver reset, the GPU gone):
 * from then on every readback on it fails, so a worker exits and its supervisor starts a fresh
 * one (the apps' `bootstrap` failure). Never, where no webgpu backend starts.
 */
export function gpuLost(): Promise<GpuFault> {
  return lost;
}

/** tfjs's webgpu backend class, which makeWebGpuBackend makes its backend of (registerWebGpuDevice). */
type WebGpuBackendClass = new (device: GPUDevice, adapterInfo?: GPUAdapterInfo) => tf.KernelBackend;
let webGpuBackendClass: WebGpuBackendClass | null = null;

/**
 * Registers the `webgpu` backend over a device the engine asks for, in place of the one
 * @tensorflow/tfjs-backend-webgpu makes on import (before tfjs starts the backend; once a
 * backend is running it is kept). The device is tfjs's (the high-performance adapter, timestamp
 * queries where offered, the same limits) with, beyond those, every storage buffer a shader
 * stage may bind on the adapter rather than WebGPU's default of 8: a program of the engine's
 * takes as many tensors as the adapter binds (webgpu-program.ts, storageBufferLimit), so the
 * optimizer updates more parameters a dispatch and sums more gradients.
 */
export function registerWebGpuDevice(WebGPUBackend: WebGpuBackendClass): void {
  const engine = tf.engine() as unknown as { registry: Record<string, unknown>; registryFactory: Record<string, { factory: unknown } | undefined> };
  webGpuBackendClass = WebGPUBackend;
  if (engine.registry['webgpu'] || engine.registryFactory['webgpu']?.factory === makeWebGpuBackend) return;
  tf.removeBackend('webgpu');
  tf.registerBackend('webgpu', makeWebGpuBackend, 3);
}

async function makeWebGpuBackend(): Promise<tf.KernelBackend> {
  const gpu = (globalThis as unknown as { navigator: { gpu: GPU } }).navigator.gpu;
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter || !webGpuBackendClass) throw new Error('no WebGPU adapter');
  const requiredLimits: Record<string, number> = { maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage };
  for (const limit of TFJS_LIMITS) requiredLimits[limit] = adapter.limits[limit];
  const matrices = tensorCores ? subgroupMatricesOf(adapter) : null;
  const requiredFeatures = [...(adapter.features.has('timestamp-query') ? ['timestamp-query'] : []), ...(matrices ? SUBGROUP_MATRIX_FEATURES : [])] as GPUFeatureName[];
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  // Before tfjs makes a pipeline or a buffer: the bind groups its dispatches ask for again are kept (webgpu-bind-groups.ts).
  cacheBindGroups(device);
  useSubgroupMatrices(matrices);
  const backend = new webGpuBackendClass(device, (adapter as { info?: GPUAdapterInfo }).info) as tf.KernelBackend & { read(dataId: object): Promise<tf.BackendValues> };
  // Every tensor's values (tensor.data()) come through read: none is given after an error the device reported (gpu-faults.ts).
  watchGpuFaults(device);
  void whenLost(device).then(reportLost);
  const read = backend.read.bind(backend);
  backend.read = (dataId) => readChecked(device, () => read(dataId));
  return backend;
}
