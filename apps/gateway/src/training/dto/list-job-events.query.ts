import { PageQuery } from '../../http/page.query';

/** GET /v1/preview/training-jobs/{id}/events?after&limit (oldest first). */
export class ListJobEventsQuery extends PageQuery {}
