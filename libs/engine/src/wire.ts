/**
 * The engine's pure, tensor-free part: validation of requests as they arrive on the wire
 * (JSON schemas for constrained decoding; chat prompts, counted with the model's own
 * tokenizer and chat template against its context window). Services that must not load
 * TensorFlow.js (the chat service) import this entry point, `@trainyard/engine/wire`, never
 * `@trainyard/engine` itself.
 */
export { JsonSchemaChecker } from './grammar/schema-check';
export { ChatPrompt, PromptError, readChatPrompt, readModelLimits } from './prompt';
export type { ModelLimits } from './prompt';
export type { ChatMessage, ToolDefinition } from './chat-template';
