import { IsOptional, IsUUID } from 'class-validator';
import { PageQuery } from '../../http/page.query';

/** GET /v1/preview/training-jobs?model_id&after&limit (newest first). */
export class ListTrainingJobsQuery extends PageQuery {
  @IsOptional()
  @IsUUID()
  model_id?: string;
}
