import { RLPlanItem, packRlSteps, untrainableTokens } from '../../src/training/rl-steps';

/** An item of `length` tokens (what packing reads), its advantage its place in the list. */
const item = (length: number, place: number): RLPlanItem => ({
  sequence: { tokens: Array.from({ length }, () => 1), mask: Array.from({ length }, () => 1), logprobs: Array.from({ length }, () => -1) },
  advantage: place,
});
const places = (steps: RLPlanItem[][]) => steps.map((step) => step.map((i) => i.advantage));

describe('packRlSteps', () => {
  it('fills each step in order up to the budget, counting every row at the longest row of its step', () => {
    // 4 + 4 fit 8; a third row of 4 would make 12; 10 exceeds the budget and stands alone; 2
    // beside it would count 2 x 10, so it starts a step, and 3 beside the 2 counts 2 x 3 = 6.
    const steps = packRlSteps([4, 4, 4, 10, 2, 3].map(item), 8);
    expect(places(steps)).toEqual([[0, 1], [2], [3], [4, 5]]);
  });

  it('is empty without items', () => {
    expect(packRlSteps([], 8)).toEqual([]);
  });
});

describe('untrainableTokens', () => {
  const config = { maxPositionEmbeddings: 4, vocabSize: 10 };

  it('names a sequence longer than the positions, then an id outside the vocabulary', () => {
    expect(untrainableTokens(config, [1, 2, 3, 4])).toBeNull();
    expect(untrainableTokens(config, [1, 2, 3, 4, 5])).toBe("5 tokens exceed the model's 4 positions");
    expect(untrainableTokens(config, [1, 10])).toBe('token id 10 is outside the vocabulary');
    expect(untrainableTokens(config, [1, -1])).toBe('token id -1 is outside the vocabulary');
    expect(untrainableTokens(config, [1.5])).toBe('token id 1.5 is outside the vocabulary');
  });
});
