/**
 * Which envelope a path's errors take. Under `/v1` (after any API_PREFIX), the preview
 * (training) routes answer FastAPI's `{detail}`, which ART reads, and so do the health routes;
 * every other path there, an unknown one included, is OpenAI's and answers OpenAI's envelope,
 * which the OpenAI SDKs read. Paths outside `/v1` (the console) answer `{detail}`.
 */
const UNDER_V1 = /\/v1(\/.*)?$/;
const DETAIL_ROUTES = /^\/(preview|health|system-check)(\/|$)/;

/** The Tinker SDK's routes, `<service root>/api/v1/<name>`: they answer `{detail}` as the preview routes do. */
const TINKER_ROUTE =
  /\/api\/v1\/(client\/config|client\/dynamic_config|get_server_capabilities|create_session|session_heartbeat|telemetry|create_model|forward_backward|forward|optim_step|save_weights_for_sampler|retrieve_future|save_weights|load_weights|weights_info|asample|create_sampling_session|training_runs(\/[^/]+(\/checkpoints)?)?)$/;

export function isTinkerRoute(path: string): boolean {
  return TINKER_ROUTE.test(path.split('?')[0]);
}

export function isOpenAiRoute(path: string): boolean {
  if (isTinkerRoute(path)) return false;
  const rest = UNDER_V1.exec(path.split('?')[0]);
  return rest !== null && !DETAIL_ROUTES.test(rest[1] ?? '/');
}
