/**
 * The engine's pure, tensor-free part: validation of training requests as they arrive on the
 * wire. Services that must not load TensorFlow.js (the training orchestrator) import this
 * entry point, `@trainyard/engine/wire`, never `@trainyard/engine` itself.
 */
export * from './training/experimental-config';
export * from './training/art-trajectories';
export type { RLTrajectory, RLTrajectoryGroup, RLChoice, RLHistory, SftConversation } from './training/sequences';
