import type { CallerScope } from './models.messages';

/** A numbered step of a model, backed by a PEFT adapter. */
export interface CheckpointRecord {
  id: string;
  step: number;
  /** Flat map of metric name to number, e.g. {"train/reward": 0.5}. */
  metrics: Record<string, number>;
  /** ISO 8601. */
  created_at: string;
  /** Hex SHA-256 of adapter_model.safetensors. */
  adapter_sha256: string | null;
}

export type SortOrder = 'asc' | 'desc';

/** The cursor-paginated list envelope of api.md. */
export interface Page<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface ListCheckpointsRequest extends CallerScope {
  model_id: string;
  /** Id of the last checkpoint already seen. */
  after?: string;
  limit: number;
  order: SortOrder;
}

export interface DeleteCheckpointsRequest extends CallerScope {
  model_id: string;
  steps: number[];
}

export interface DeleteCheckpointsReply {
  deleted_count: number;
  not_found_steps: number[];
}
