import type { SortOrder } from '@trainyard/contracts';
import { IsIn } from 'class-validator';
import { PageQuery } from '../../http/page.query';

/** GET .../input_items and GET /v1/conversations/{id}/items: `after`, `limit` and `order`, newest first by default as OpenAI lists them. */
export class ListItemsQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'desc';
}
