import type { BlobRef } from './blob-ref';
import type { CallerScope } from './models.messages';

export interface LogTrajectoriesRequest extends CallerScope {
  model_id: string;
  split: string;
  /** The JSON array of trajectory groups; it can be megabytes, so it travels as a blob. */
  trajectory_groups: BlobRef;
}

export interface LogTrajectoriesReply {
  model_id: string;
  step: number;
  split: string;
  /** The metrics this call computed, already prefixed with `{split}/`. */
  metrics: Record<string, number>;
}
