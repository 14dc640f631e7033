import { WorkerConfig } from '@trainyard/runtime';

export class TrainingWorkerConfig extends WorkerConfig {
  override HTTP_PORT = 3106;
}
