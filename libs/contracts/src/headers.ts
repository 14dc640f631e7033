/** Header carrying the request id over HTTP and NATS alike. */
export const REQUEST_ID_HEADER = 'x-request-id';
