import { pathToLoc } from './issues';

describe('pathToLoc', () => {
  it('splits a JSON path into a FastAPI loc under body', () => {
    expect(pathToLoc('trajectory_groups[0].trajectories[12].messages_and_choices[3].token_ids')).toEqual([
      'body', 'trajectory_groups', 0, 'trajectories', 12, 'messages_and_choices', 3, 'token_ids',
    ]);
    expect(pathToLoc('learning_rate')).toEqual(['body', 'learning_rate']);
  });
});
