export { newToolCallId, ToolCallStream } from './tool-call-stream';
export type { ParsedToolCall, ReplyPart } from './tool-call-stream';
export { callOpening, detectToolCallFormat, toolCallSyntax } from './tool-call-syntax';
export type { ToolCallFormat, ToolCallSyntax } from './tool-call-syntax';
