import type { SortOrder } from '@trainyard/contracts';
import { IsIn } from 'class-validator';
import { PageQuery } from '../../http/page.query';

/** GET /v1/preview/models/{id}/checkpoints?after&limit&order */
export class ListCheckpointsQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';
}
