export * from './experimental-config';
export * from './trajectories';
