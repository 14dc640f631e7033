import { WorkerConfig } from '@trainyard/runtime';

export class InferenceWorkerConfig extends WorkerConfig {
  override HTTP_PORT = 3105;
}
