import 'reflect-metadata';
import { gpuLost, selectBackend, setFusedKernels, setTensorCores } from '@trainyard/engine';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './config/training-worker.config';
import { TrainingWorkerModule } from './training-worker.module';

runMain(async () => {
  const config = loadConfig(TrainingWorkerConfig);
  setFusedKernels(config.WEBGPU_FUSED_KERNELS === 'on');
  setTensorCores(config.WEBGPU_TENSOR_CORES === 'on');
  const backend = await selectBackend(config.COMPUTE_BACKEND);
  await bootstrap(TrainingWorkerModule.forRoot(config, backend), { name: 'training-worker', config, failure: gpuLost() });
});
