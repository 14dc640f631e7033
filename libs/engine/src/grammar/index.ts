export { GrammarBudgetError, GrammarError, JsonGrammarCompiler } from './json-grammar';
export type { CompiledGrammar, GrammarFault, GrammarKind, GrammarSpec, ToolCallRequest, ToolSpec } from './json-grammar';
export type { GrammarMatcher } from './json-matcher';
export { ReasoningGate } from './reasoning-gate';
