import { ServiceError } from '@trainyard/contracts';

/** A tool_choice in the terms both APIs share: a mode, or the name of one function. */
export type ToolChoiceInput = 'none' | 'auto' | 'required' | { name: string };

/**
 * Checks a tool_choice against the functions declared (chat and responses alike): a forced
 * choice needs tools, a named function must be one of them, and no name may be declared
 * twice (a call names its function). `nameParam(i)` is how the request names function i's name.
 */
export function checkToolChoice(names: readonly string[], choice: ToolChoiceInput, nameParam: (index: number) => string): void {
  const declared = new Set<string>();
  names.forEach((name, i) => {
    if (declared.has(name)) throw ServiceError.invalid(`the function name ${JSON.stringify(name)} is declared twice`, nameParam(i));
    declared.add(name);
  });
  if (choice === 'none' || choice === 'auto') return;
  if (names.length === 0) throw ServiceError.invalid(`tool_choice ${JSON.stringify(choice)} needs at least one function in tools`, 'tool_choice');
  if (typeof choice === 'object' && !declared.has(choice.name)) {
    throw ServiceError.invalid(`tool_choice names the function ${JSON.stringify(choice.name)}, which is not in tools`, 'tool_choice');
  }
}
