/**
 * How a model family writes a tool call, as its chat template teaches it (and renders the
 * calls of earlier assistant turns), so that a checkpoint trained on its own sampled calls
 * learns the format it will be prompted with:
 * - hermes (ChatML templates of Qwen2.5, SmolLM2, Hermes): `<tool_call>\n{"name": "f",
 *   "arguments": {...}}\n</tool_call>`, several separated by a newline, possibly after text;
 * - llama3-json (Llama 3.x): `{"name": "f", "parameters": {...}}`, one call per reply (its
 *   template refuses several).
 */
export type ToolCallFormat = 'hermes' | 'llama3-json' | 'none';

export interface ToolCallSyntax {
  format: Exclude<ToolCallFormat, 'none'>;
  /** The text that opens every call; in free text, writing it commits to a call. */
  trigger: string;
  /** The key that follows the name and holds the arguments object. */
  argumentsKey: string;
  /** What comes after the arguments object, closing the call. */
  end: string;
  /** Between two calls. */
  separator: string;
  /** Whether a reply may hold more than one call. */
  parallel: boolean;
}

const HERMES: ToolCallSyntax = {
  format: 'hermes',
  trigger: '<tool_call>',
  argumentsKey: 'arguments',
  end: '}\n</tool_call>',
  separator: '\n',
  parallel: true,
};

const LLAMA3_JSON: ToolCallSyntax = {
  format: 'llama3-json',
  trigger: '{"name": "',
  argumentsKey: 'parameters',
  end: '}',
  separator: '; ',
  parallel: false,
};

export function detectToolCallFormat(chatTemplateSource: string): ToolCallFormat {
  if (chatTemplateSource.includes('<tool_call>')) return 'hermes';
  if (/<\|python_tag\|>|"parameters"|ipython/.test(chatTemplateSource)) return 'llama3-json';
  return 'none';
}

/**
 * The syntax for a template's format. A template that shows no format of its own gets the
 * hermes one, the most widespread among small open models: its calls still come back parsed
 * and valid, since the grammar writes them.
 */
export function toolCallSyntax(format: ToolCallFormat): ToolCallSyntax {
  return format === 'llama3-json' ? LLAMA3_JSON : HERMES;
}

/** The exact text of a call up to its arguments object, as the template renders it. */
export function callOpening(syntax: ToolCallSyntax, name: string): string {
  const head = `{"name": ${JSON.stringify(name)}, "${syntax.argumentsKey}": `;
  return syntax.format === 'hermes' ? `${syntax.trigger}\n${head}` : head;
}
