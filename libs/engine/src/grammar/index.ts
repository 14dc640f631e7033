export { GrammarBudgetError, GrammarError, JsonGrammarCompiler } from './json-grammar';
export type { CompiledGrammar, ResponseFormat, ToolCallRequest, ToolSpec } from './json-grammar';
export type { GrammarMatcher } from './json-matcher';
