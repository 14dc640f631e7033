import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { gpuLost, selectBackend, setBufferPoolBytes, setFusedKernels, setTensorCores } from '@trainyard/engine';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { InferenceWorkerConfig } from './config/inference-worker.config';
import { InferenceWorkerModule } from './inference-worker.module';

runMain(async () => {
  const config = loadConfig(InferenceWorkerConfig);
  setFusedKernels(config.WEBGPU_FUSED_KERNELS === 'on');
  setTensorCores(config.WEBGPU_TENSOR_CORES === 'on');
  setBufferPoolBytes(config.WEBGPU_BUFFER_POOL_MB * 2 ** 20);
  const backend = await selectBackend(config.COMPUTE_BACKEND);
  // Why a backend was passed over, or tensor cores asked for were left off.
  for (const note of backend.notes) new Logger('backend').log(note);
  await bootstrap(InferenceWorkerModule.forRoot(config, backend), { name: 'inference-worker', config, failure: gpuLost() });
});
