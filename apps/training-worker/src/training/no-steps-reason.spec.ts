import { rlNoStepsReason, sftNoStepsReason } from './no-steps-reason';

describe('why a job makes no gradient step', () => {
  it('says nothing when there are steps', () => {
    expect(rlNoStepsReason({ numSequences: 2, numGroupsSubmitted: 3, numGroupsTrainable: 1 })).toBeNull();
    expect(sftNoStepsReason(1)).toBeNull();
  });

  it('names equal rewards when no group had an advantage', () => {
    const reason = rlNoStepsReason({ numSequences: 0, numGroupsSubmitted: 4, numGroupsTrainable: 0 });
    expect(reason).toContain('equal rewards');
    expect(reason).toContain('0 of 4 groups');
  });

  it('names missing trainable tokens when groups had advantages but no Choices', () => {
    const reason = rlNoStepsReason({ numSequences: 0, numGroupsSubmitted: 2, numGroupsTrainable: 2 });
    expect(reason).toContain('No trainable tokens');
    expect(reason).not.toContain('equal rewards');
  });

  it('names an empty submission and an empty dataset', () => {
    expect(rlNoStepsReason({ numSequences: 0, numGroupsSubmitted: 0, numGroupsTrainable: 0 })).toContain('No trajectory groups');
    expect(sftNoStepsReason(0)).toContain('no conversations');
  });
});
