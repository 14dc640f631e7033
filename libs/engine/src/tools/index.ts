export { detectToolCallFormat, newToolCallId, parseToolCalls } from './tool-calls';
export type { ParsedReply, ParsedToolCall, ToolCallFormat } from './tool-calls';
