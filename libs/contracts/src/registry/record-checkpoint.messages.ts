import type { BlobRef } from './blob-ref';
import type { CallerScope } from './models.messages';

/** One file of a PEFT adapter directory, parked as a blob. */
export interface AdapterFileBlob {
  name: string;
  content: BlobRef;
}

/**
 * A training job's new checkpoint. The registry gives it step = newest + 1 exactly once per
 * job: the checkpoint's id is the job's id, so a repeated request returns the first record.
 */
export interface RecordCheckpointRequest extends CallerScope {
  model_id: string;
  job_id: string;
  files: AdapterFileBlob[];
  metrics: Record<string, number>;
}

export interface GetModelRequest extends CallerScope {
  model_id: string;
}
