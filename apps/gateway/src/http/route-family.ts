/**
 * Which envelope a path's errors take. Under `/v1` (after any API_PREFIX), the preview
 * (training) routes answer FastAPI's `{detail}`, which ART reads, and so do the health routes;
 * every other path there, an unknown one included, is OpenAI's and answers OpenAI's envelope,
 * which the OpenAI SDKs read. Paths outside `/v1` (the console) answer `{detail}`.
 */
const UNDER_V1 = /\/v1(\/.*)?$/;
const DETAIL_ROUTES = /^\/(preview|health|system-check)(\/|$)/;

export function isOpenAiRoute(path: string): boolean {
  const rest = UNDER_V1.exec(path.split('?')[0]);
  return rest !== null && !DETAIL_ROUTES.test(rest[1] ?? '/');
}
