import { randomBytes } from 'node:crypto';

/**
 * Tool calls in generated text, in the format the model's chat template taught it:
 * - hermes (ChatML templates of Qwen2.5, SmolLM2, Hermes): one or more
 *   `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>` blocks, possibly after text;
 * - llama3-json (Llama 3.x): the whole reply is `{"name": ..., "parameters": {...}}`,
 *   optionally after `<|python_tag|>`, several separated by `;`.
 * Small models often get the format slightly wrong; anything that is not a well-formed call
 * stays in the content, so a broken call degrades to a plain reply instead of an error.
 */
export type ToolCallFormat = 'hermes' | 'llama3-json' | 'none';

export interface ParsedToolCall {
  id: string;
  type: 'function';
  /** arguments as a JSON string, as OpenAI returns them. */
  function: { name: string; arguments: string };
}

export interface ParsedReply {
  content: string | null;
  toolCalls: ParsedToolCall[];
}

export function detectToolCallFormat(chatTemplateSource: string): ToolCallFormat {
  if (chatTemplateSource.includes('<tool_call>')) return 'hermes';
  if (/<\|python_tag\|>|"parameters"|ipython/.test(chatTemplateSource)) return 'llama3-json';
  return 'none';
}

export function parseToolCalls(text: string, format: ToolCallFormat): ParsedReply {
  if (format === 'hermes') return parseHermes(text);
  if (format === 'llama3-json') return parseLlama3Json(text);
  return plain(text);
}

/** `call_` and 24 random letters and digits, the shape of OpenAI's ids. */
export function newToolCallId(): string {
  return `call_${randomBytes(18).toString('base64url').replace(/[-_]/g, '0').slice(0, 24)}`;
}

/** A closing tag cut off by max_tokens or a stop string still ends the block. */
const HERMES_BLOCK = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;

function parseHermes(text: string): ParsedReply {
  const toolCalls: ParsedToolCall[] = [];
  const content = text.replace(HERMES_BLOCK, (block, body: string) => {
    const call = toCall(parseJson(body.trim()), 'arguments');
    if (!call) return block;
    toolCalls.push(call);
    return '';
  });
  return toolCalls.length > 0 ? { content: content.trim() || null, toolCalls } : plain(text);
}

function parseLlama3Json(text: string): ParsedReply {
  const body = text.trim().replace(/^<\|python_tag\|>/, '').trim();
  if (!body.startsWith('{') && !body.startsWith('[')) return plain(text);
  const values = splitJsonValues(body, /^[\s;,]*/);
  if (!values) return plain(text);
  const objects = values.flatMap((v) => (Array.isArray(v) ? v : [v]));
  const toolCalls = objects.map((v) => toCall(v, 'parameters'));
  if (toolCalls.length === 0 || toolCalls.some((c) => c === null)) return plain(text);
  return { content: null, toolCalls: toolCalls as ParsedToolCall[] };
}

/** A call from {"name": string, <argumentsKey> | "arguments": object or JSON string}; null if it is not one. */
function toCall(value: unknown, argumentsKey: 'arguments' | 'parameters'): ParsedToolCall | null {
  if (!isObject(value) || typeof value['name'] !== 'string' || value['name'].length === 0) return null;
  const args = value[argumentsKey] ?? value['arguments'] ?? value['parameters'] ?? {};
  const parsedArgs = typeof args === 'string' ? parseJson(args) : args;
  if (!isObject(parsedArgs)) return null;
  return { id: newToolCallId(), type: 'function', function: { name: value['name'], arguments: JSON.stringify(parsedArgs) } };
}

/**
 * The JSON values of a text made only of JSON values and separators; null if anything else
 * is in it. Scans for the end of each value (outside strings) and lets JSON.parse judge it.
 */
function splitJsonValues(text: string, separator: RegExp): unknown[] | null {
  const values: unknown[] = [];
  let rest = text;
  while ((rest = rest.replace(separator, '')).length > 0) {
    const end = endOfValue(rest);
    if (end < 0) return null;
    const value = parseJson(rest.slice(0, end));
    if (value === undefined) return null;
    values.push(value);
    rest = rest.slice(end);
  }
  return values;
}

/** Index just past the object or array that opens the text, or -1 if it never closes. */
function endOfValue(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function plain(text: string): ParsedReply {
  return { content: text, toolCalls: [] };
}
