import type { ModelRecord } from '@trainyard/contracts';
import type { ModelRow } from './model.repository';

export function toModelRecord(model: ModelRow): ModelRecord {
  return {
    id: model.id,
    entity: model.entityName,
    project: model.project,
    name: model.name,
    base_model: model.baseModel,
    run_id: model.runId,
    created: Math.floor(model.createdAt.getTime() / 1000),
  };
}
