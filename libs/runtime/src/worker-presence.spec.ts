import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { GpuAdapterReport } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { ReadinessService } from './health/readiness.service';
import { WorkerPresenceModule } from './worker-presence.module';

const LAVAPIPE: GpuAdapterReport = { vendor: 'mesa', architecture: 'software', device: 'llvmpipe', description: 'llvmpipe: Mesa 25.0.7', fallback: true };
const H100: GpuAdapterReport = { vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H100 80GB HBM3', fallback: false };

/** The bus is only answered on here; the readiness probes are what is checked. */
@Global()
@Module({
  providers: [{ provide: MessageBus, useValue: { respond: () => ({ unsubscribe: () => undefined }) } }, ReadinessService],
  exports: [MessageBus, ReadinessService],
})
class Fakes {}

async function computeCheck(backend: string, gpu: boolean, adapter: GpuAdapterReport | null, requireGpu: boolean) {
  const moduleRef = await Test.createTestingModule({
    imports: [Fakes, WorkerPresenceModule.forRoot({ kind: 'inference', instance: 'i-1', backend, gpu, adapter, started_at: '' }, { requireGpu })],
  }).compile();
  await moduleRef.init();
  const { checks } = await moduleRef.get(ReadinessService).report();
  await moduleRef.close();
  return checks['compute'];
}

describe('worker presence: the compute readiness check', () => {
  it('fails under REQUIRE_GPU on a fallback (software) WebGPU adapter, naming it', async () => {
    const check = await computeCheck('webgpu', false, LAVAPIPE, true);
    expect(check.ok).toBe(false);
    expect(check.error).toMatch(/REQUIRE_GPU is set but the webgpu backend has no GPU/);
    expect(check.error).toMatch(/llvmpipe.*fallback adapter/);
  });

  it('passes under REQUIRE_GPU on a hardware adapter, and reports the adapter', async () => {
    const check = await computeCheck('webgpu', true, H100, true);
    expect(check.ok).toBe(true);
    expect(check).toMatchObject({ backend: 'webgpu', gpu: true, adapter: H100 });
  });

  it('passes on a CPU backend when no GPU is required', async () => {
    const check = await computeCheck('wasm', false, null, false);
    expect(check).toMatchObject({ ok: true, backend: 'wasm', gpu: false, adapter: null });
  });
});
