import { PageQuery } from '../../http/page.query';

/** `after` (the last id of the previous page) and `limit` (1..100, default 20) of the fine-tuning lists. */
export class FineTuningPageQuery extends PageQuery {}
