/**
 * The engine's pure, tensor-free part: validation of requests as they arrive on the wire
 * (training requests; JSON schemas for constrained decoding; chat prompts, counted with the
 * model's own tokenizer and chat template against its context window). Services that must not load
 * TensorFlow.js (the training orchestrator, the chat service) import this entry point,
 * `@trainyard/engine/wire`, never `@trainyard/engine` itself.
 */
export { JsonSchemaChecker } from './grammar/schema-check';
export { ChatPrompt, PromptError, readChatPrompt } from './prompt';
export type { ChatMessage, ToolDefinition } from './chat-template';
export * from './training/experimental-config';
export * from './training/art-trajectories';
export type { RLTrajectory, RLTrajectoryGroup, RLChoice, RLHistory, SftConversation } from './training/sequences';
