import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { gpuLost, selectBackend, setBufferPoolBytes, setFusedKernels, setTensorCores } from '@trainyard/engine';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './config/training-worker.config';
import { TrainingWorkerModule } from './training-worker.module';

runMain(async () => {
  const config = loadConfig(TrainingWorkerConfig);
  setFusedKernels(config.WEBGPU_FUSED_KERNELS === 'on');
  setTensorCores(config.WEBGPU_TENSOR_CORES === 'on');
  setBufferPoolBytes(config.WEBGPU_BUFFER_POOL_MB * 2 ** 20);
  const backend = await selectBackend(config.COMPUTE_BACKEND);
  // Why a backend was passed over, or tensor cores asked for were left off.
  for (const note of backend.notes) new Logger('backend').log(note);
  await bootstrap(TrainingWorkerModule.forRoot(config, backend), { name: 'training-worker', config, failure: gpuLost() });
});
