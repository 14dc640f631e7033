import { artTrajectoryPath, mapArtTrajectoryGroups, parseSftJsonl } from './trajectories';

const choice = (extra: Record<string, unknown> = {}) => ({
  index: 0,
  message: { role: 'assistant', content: 'Hello' },
  finish_reason: 'stop',
  logprobs: {
    content: [
      { token: 'Hel', logprob: -0.5, bytes: [72, 101, 108], top_logprobs: [], token_id: 10 },
      { token: 'lo', logprob: -0.25, bytes: [108, 111], top_logprobs: [], token_id: 11 },
    ],
  },
  ...extra,
});

describe('mapArtTrajectoryGroups', () => {
  it('keeps the sampled token ids and logprobs of a Choice, and plain messages as they are', () => {
    const { groups, issues } = mapArtTrajectoryGroups([
      {
        trajectories: [
          {
            messages_and_choices: [{ role: 'system', content: [{ type: 'text', text: 'Be ' }, { type: 'text', text: 'brief.' }] }, { role: 'user', content: 'Hi' }, choice()],
            reward: 0.5,
            metrics: { anything: 1 },
          },
        ],
        metadata: { ignored: true },
      },
    ]);
    expect(issues).toEqual([]);
    const [trajectory] = groups[0].trajectories;
    expect(trajectory.reward).toBe(0.5);
    expect(trajectory.messagesAndChoices).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { choice: { tokenIds: [10, 11], logprobs: [-0.5, -0.25], message: { role: 'assistant', content: 'Hello' } } },
    ]);
  });

  it('prefers the choice token_ids, and matches logprobs to them by position and id', () => {
    const { groups } = mapArtTrajectoryGroups([{ trajectories: [{ messages_and_choices: [choice({ token_ids: [10, 12, 2] })] }] }]);
    const item = groups[0].trajectories[0].messagesAndChoices[0] as { choice: { tokenIds: number[]; logprobs: (number | null)[] } };
    expect(item.choice.tokenIds).toEqual([10, 12, 2]);
    expect(item.choice.logprobs).toEqual([-0.5, null, null]);
    expect(groups[0].trajectories[0].reward).toBe(0);
  });

  it('maps additional histories and tools', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
    const { groups, issues } = mapArtTrajectoryGroups([
      { trajectories: [{ messages_and_choices: [choice()], tools, additional_histories: [{ messages_and_choices: [{ role: 'user', content: 'x' }, choice()] }] }] },
    ]);
    expect(issues).toEqual([]);
    expect(groups[0].trajectories[0].tools).toEqual(tools);
    expect(groups[0].trajectories[0].additionalHistories?.[0].messagesAndChoices).toHaveLength(2);
  });

  it('names the JSON path of every problem', () => {
    const { issues } = mapArtTrajectoryGroups([
      { trajectories: [{ messages_and_choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, logprobs: null }], reward: 'high' }] },
      { nope: [] },
      { trajectories: [{ messages_and_choices: [choice({ token_ids: [1, -1] }), { content: 'no role' }] }] },
    ]);
    expect(issues.map((i) => i.path)).toEqual([
      'trajectory_groups[0].trajectories[0].reward',
      'trajectory_groups[0].trajectories[0].messages_and_choices[0]',
      'trajectory_groups[1].trajectories',
      'trajectory_groups[2].trajectories[0].messages_and_choices[0].token_ids',
      'trajectory_groups[2].trajectories[0].messages_and_choices[1].role',
    ]);
    expect(mapArtTrajectoryGroups({}).issues).toEqual([{ path: 'trajectory_groups', message: 'must be a list of trajectory groups' }]);
  });

  it('asks for logprobs when a Choice carries no token ids at all', () => {
    const { issues } = mapArtTrajectoryGroups([{ trajectories: [{ messages_and_choices: [{ message: { role: 'assistant', content: 'x' } }] }] }]);
    expect(issues[0].message).toMatch(/logprobs: true/);
  });
});

describe('artTrajectoryPath', () => {
  it("names a trajectory, or one of its additional histories, by its place in the request's trajectory_groups", () => {
    expect(artTrajectoryPath(2, 5)).toBe('trajectory_groups[2].trajectories[5]');
    expect(artTrajectoryPath(0, 1, 1)).toBe('trajectory_groups[0].trajectories[1].additional_histories[0]');
  });
});

describe('parseSftJsonl', () => {
  const line = (messages: unknown, extra = {}) => JSON.stringify({ messages, ...extra });

  it('reads one conversation per non-empty line', () => {
    const text = [line([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }]), '', line([{ role: 'user', content: 'c' }, { role: 'assistant', content: 'd' }], { tools: [] })].join('\n');
    const { conversations, issues } = parseSftJsonl(text);
    expect(issues).toEqual([]);
    expect(conversations).toHaveLength(2);
    expect(conversations[1].tools).toEqual([]);
  });

  it('names the line of each bad one', () => {
    const text = [
      line([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }]),
      '{not json',
      line([{ role: 'user', content: 'no answer' }]),
      JSON.stringify({ prompt: 'x' }),
    ].join('\n');
    const { issues } = parseSftJsonl(text);
    expect(issues.map((i) => i.path)).toEqual(['line 2', 'line 3', 'line 4']);
    expect(issues[1].message).toMatch(/last message must be from the assistant/);
  });

  it('refuses an empty file', () => {
    expect(parseSftJsonl('\n\n').issues).toEqual([{ path: 'line 1', message: 'the file holds no conversations' }]);
  });

  it("keeps OpenAI's weight 0 on an assistant message, and refuses a weight it cannot honour", () => {
    const turns = (first: unknown, last: unknown = {}) => [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b', ...(first as object) },
      { role: 'user', content: 'c' },
      { role: 'assistant', content: 'd', ...(last as object) },
    ];
    const good = parseSftJsonl([line(turns({ weight: 0 }, { weight: 1 })), line(turns({ weight: null }))].join('\n'));
    expect(good.issues).toEqual([]);
    expect(good.conversations.map((c) => c.messages.map((m) => m.weight))).toEqual([
      [undefined, 0, undefined, undefined],
      [undefined, undefined, undefined, undefined],
    ]);
    const bad = parseSftJsonl(
      [line(turns({ weight: 0.5 })), line([{ role: 'user', content: 'a', weight: 0 }, { role: 'assistant', content: 'b' }]), line(turns({ weight: 0 }, { weight: 0 }))].join('\n'),
    );
    expect(bad.conversations).toEqual([]);
    expect(bad.issues).toEqual([
      { path: 'line 1: messages[1].weight', message: 'must be 0 or 1' },
      { path: 'line 2: messages[0].weight', message: expect.stringMatching(/assistant messages only/) },
      { path: 'line 3', message: 'every assistant message has weight 0: at least one must be trained' },
    ]);
  });
});
