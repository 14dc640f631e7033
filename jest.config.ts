import { getJestProjectsAsync } from '@nx/jest';

export default async () => ({
  projects: await getJestProjectsAsync(),
  // A global option: projects' own testTimeout is ignored when they run together. End-to-end
  // tests stop and start whole processes, which takes seconds on a loaded 2-core machine.
  testTimeout: 60_000,
});
