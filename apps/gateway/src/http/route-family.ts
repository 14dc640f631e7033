/** Routes that mirror OpenAI's API answer errors in OpenAI's envelope; the rest in `{detail}`. */
const OPENAI_ROUTES = /\/v1\/(chat\/completions|models|files)(\/|$|\?)/;

export function isOpenAiRoute(path: string): boolean {
  return OPENAI_ROUTES.test(path);
}
