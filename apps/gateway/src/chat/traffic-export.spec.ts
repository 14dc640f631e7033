import { mapArtTrajectoryGroups, parseSftJsonl } from '@trainyard/art';
import type { ExportRecord, ServedTrace } from '@trainyard/contracts';
import { rewardOf, toArtGroups, toSftLines } from './traffic-export';

const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };

function trace(answer: string, choices = 1): ServedTrace {
  return {
    base_model: 'tiny',
    model_id: 'm-1',
    checkpoint_step: 2,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hi' },
    ],
    tools: [tool],
    prompt_token_ids: [1, 2, 3],
    choices: Array.from({ length: choices }, (_, index) => ({
      index,
      message: { role: 'assistant' as const, content: `${answer}${index}` },
      finish_reason: 'stop',
      token_ids: [40 + index, 41],
      logprobs: [
        { token_id: 40 + index, token: answer, logprob: -0.5 },
        { token_id: 41, token: `${index}`, logprob: -0.25 },
      ],
    })),
  };
}

function record(id: string, metadata: Record<string, string>, served: ServedTrace | null = trace(id)): ExportRecord {
  return { id, object: 'chat.completion', created_at: 1_800_000_000, model: 'acme/p/agent', metadata, trace: served };
}

const sftOptions = { trajectoryBy: 'trajectory_id' };

describe('stored traffic as SFT JSONL', () => {
  it('writes one line per choice: the messages the model was given, then its answer, with the tools', () => {
    const { lines, skipped } = toSftLines([record('a', {}), record('b', {}, trace('b', 2))], sftOptions);
    expect(skipped).toEqual([]);
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }, { role: 'assistant', content: 'a0' }], tools: [tool] },
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }, { role: 'assistant', content: 'b0' }], tools: [tool] },
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }, { role: 'assistant', content: 'b1' }], tools: [tool] },
    ]);
  });

  it('is a file the SFT jobs parse, tool calls included', () => {
    const served = trace('x');
    served.choices[0].message = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] };
    const { lines } = toSftLines([record('a', {}), record('b', {}, served)], sftOptions);
    const parsed = parseSftJsonl(lines.join('\n'));
    expect(parsed.issues).toEqual([]);
    expect(parsed.conversations).toHaveLength(2);
    expect(parsed.conversations[1].messages.at(-1)).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: 'lookup' } }] });
  });

  it('names the records it cannot export: a response stored before traces were kept', () => {
    const { lines, skipped } = toSftLines([record('old', {}, null), record('a', {})], sftOptions);
    expect(lines).toHaveLength(1);
    expect(skipped).toEqual([{ id: 'old', reason: expect.stringMatching(/without the tokens/) }]);
  });
});

describe('stored traffic as ART trajectory groups', () => {
  const options = { trajectoryBy: 'trajectory_id', groupBy: 'group_id', rewardKey: 'reward' };

  it('groups by the metadata key in stored order, one trajectory per choice, reward from metadata', () => {
    const { groups, skipped } = toArtGroups(
      [record('a', { group_id: 'g1', reward: '1' }), record('b', { group_id: 'g2', reward: '0.5' }), record('c', { group_id: 'g1', reward: '-1' }, trace('c', 2))],
      options,
    );
    expect(skipped).toEqual([]);
    expect(groups.map((g) => ({ metadata: g.metadata, rewards: g.trajectories.map((t) => t.reward), sources: g.trajectories.map((t) => t.metadata['source_id']) }))).toEqual([
      { metadata: { group_id: 'g1' }, rewards: [1, -1, -1], sources: ['a', 'c', 'c'] },
      { metadata: { group_id: 'g2' }, rewards: [0.5], sources: ['b'] },
    ]);
  });

  it('ends each trajectory with the Choice as served: exact token ids and their sampling logprobs', () => {
    const { groups } = toArtGroups([record('a', { reward: '1' })], options);
    const trajectory = groups[0].trajectories[0];
    expect(trajectory.messages_and_choices.at(-1)).toEqual({
      index: 0,
      message: { role: 'assistant', content: 'a0' },
      logprobs: {
        content: [
          { token: 'a', logprob: -0.5, bytes: null, top_logprobs: [], token_id: 40 },
          { token: '0', logprob: -0.25, bytes: null, top_logprobs: [], token_id: 41 },
        ],
      },
      finish_reason: 'stop',
      token_ids: [40, 41],
    });
    // What an RL job reads from it: the same ids and logprobs, logprobs required.
    const mapped = mapArtTrajectoryGroups(JSON.parse(JSON.stringify(groups)), 'trajectory_groups', { requireLogprobs: true });
    expect(mapped.issues).toEqual([]);
    const choice = mapped.groups[0].trajectories[0].messagesAndChoices.at(-1);
    expect(choice).toEqual({ choice: { tokenIds: [40, 41], logprobs: [-0.5, -0.25], message: { role: 'assistant', content: 'a0' } } });
    expect(mapped.groups[0].trajectories[0].reward).toBe(1);
  });

  it('puts a record without the group key in a group of its own, even when its id equals another key', () => {
    const { groups } = toArtGroups([record('g1', { reward: '1' }), record('b', { group_id: 'g1', reward: '0' })], options);
    expect(groups).toHaveLength(2);
  });

  it('skips, by id, a record whose reward is missing or not a number', () => {
    const { groups, skipped } = toArtGroups([record('a', {}), record('b', { reward: 'good' }), record('c', { reward: '0' })], options);
    expect(groups).toHaveLength(1);
    expect(skipped).toEqual([
      { id: 'a', reason: 'metadata.reward is missing: it is the reward' },
      { id: 'b', reason: 'metadata.reward is not a number: it is the reward' },
    ]);
  });

  it('reads other keys for the group and the reward when told to', () => {
    const { groups } = toArtGroups([record('a', { rollout: 'r', score: '3' }), record('b', { rollout: 'r', score: '4' })], { trajectoryBy: 'trajectory_id', groupBy: 'rollout', rewardKey: 'score' });
    expect(groups).toEqual([expect.objectContaining({ metadata: { rollout: 'r' } })]);
    expect(groups[0].trajectories.map((t) => t.reward)).toEqual([3, 4]);
  });
});

describe('the turns of one run', () => {
  const options = { trajectoryBy: 'trajectory_id', groupBy: 'group_id', rewardKey: 'reward' };
  /** One turn of an agent run: the messages so far, and the answer it was served. */
  function turn(id: string, messages: ServedTrace['messages'], answer: string, metadata: Record<string, string>, tokens = [id.charCodeAt(0)]): ExportRecord {
    const served: ServedTrace = {
      ...trace(id),
      tools: null,
      messages,
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop', token_ids: tokens, logprobs: tokens.map((token_id) => ({ token_id, token: 't', logprob: -1 })) }],
    };
    return record(id, metadata, served);
  }
  const user = (content: string) => ({ role: 'user' as const, content });
  const assistant = (content: string) => ({ role: 'assistant' as const, content });

  it('joins the turns into one trajectory: each earlier Choice, as served, where the last turn repeats its answer', () => {
    const meta = { trajectory_id: 'run-1', group_id: 'g' };
    const first = turn('a', [user('hi')], 'hello', meta);
    const second = turn('b', [user('hi'), assistant('hello'), user('more')], 'sure', { ...meta, reward: '2' });
    const { groups, skipped } = toArtGroups([first, second], options);
    expect(skipped).toEqual([]);
    expect(groups).toHaveLength(1);
    const [trajectory] = groups[0].trajectories;
    expect(trajectory.reward).toBe(2);
    expect(trajectory.metadata).toMatchObject({ source_id: 'b', source_ids: 'a,b' });
    expect(trajectory.messages_and_choices.map((item) => ('token_ids' in item ? ['choice', item.token_ids] : [item.role, item.content]))).toEqual([
      ['user', 'hi'],
      ['choice', [97]],
      ['user', 'more'],
      ['choice', [98]],
    ]);
    // ART reads both Choices, with their ids and logprobs.
    const mapped = mapArtTrajectoryGroups(JSON.parse(JSON.stringify(groups)), 'trajectory_groups', { requireLogprobs: true });
    expect(mapped.issues).toEqual([]);
    expect(mapped.groups[0].trajectories[0].messagesAndChoices.filter((item) => 'choice' in item)).toHaveLength(2);
    // SFT writes the run once: the last turn, every assistant turn in it.
    expect(toSftLines([first, second], sftOptions).lines).toHaveLength(1);
  });

  it('keeps a turn the last one does not continue as a trajectory of its own', () => {
    const meta = { trajectory_id: 'run-2', reward: '1' };
    const other = turn('a', [user('hi')], 'hello', meta);
    const edited = turn('b', [user('hi'), assistant('HELLO'), user('more')], 'sure', meta);
    const elsewhere = turn('c', [user('bye')], 'ok', meta);
    const last = turn('d', [user('hi'), assistant('HELLO'), user('more'), assistant('sure'), user('end')], 'done', meta);
    const { groups } = toArtGroups([other, edited, elsewhere, last], options);
    const sources = groups.flatMap((g) => g.trajectories.map((t) => t.metadata['source_ids'] ?? t.metadata['source_id']));
    expect(sources).toEqual(['a', 'c', 'b,d']);
  });

  it('leaves records without the key, or of other runs, apart', () => {
    const a = turn('a', [user('hi')], 'hello', { reward: '1' });
    const b = turn('b', [user('hi'), assistant('hello'), user('more')], 'sure', { reward: '1', trajectory_id: 'x' });
    expect(toArtGroups([a, b], options).groups.flatMap((g) => g.trajectories)).toHaveLength(2);
  });

  it('names every turn of a run left out for want of a reward', () => {
    const first = turn('a', [user('hi')], 'hello', { trajectory_id: 'r', reward: '1' });
    const second = turn('b', [user('hi'), assistant('hello'), user('more')], 'sure', { trajectory_id: 'r' });
    expect(toArtGroups([first, second], options).skipped.map((s) => s.id)).toEqual(['a', 'b']);
  });

  it("says why an earlier turn without a reward was not joined: the last turn's messages leave its answer out", () => {
    // The AI SDK leaves an empty answer out of the messages it sends next.
    const first = turn('a', [user('hi')], '', { trajectory_id: 'r' });
    const last = turn('b', [user('hi'), user('more')], 'sure', { trajectory_id: 'r', reward: '1' });
    const { groups, skipped } = toArtGroups([first, last], options);
    expect(groups.flatMap((g) => g.trajectories.map((t) => t.metadata['source_id']))).toEqual(['b']);
    expect(skipped).toEqual([{ id: 'a', reason: expect.stringContaining("not joined into its run's last turn, b,") }]);
    expect(skipped[0].reason).toMatch(/^metadata\.reward is missing/);
  });

  it('says nothing of joining when a run has one turn, or the turn is its last', () => {
    const only = turn('a', [user('hi')], 'hello', { trajectory_id: 'r' });
    expect(toArtGroups([only], options).skipped).toEqual([{ id: 'a', reason: 'metadata.reward is missing: it is the reward' }]);
  });
});

describe('rewardOf', () => {
  it('reads a finite number written as text, and nothing else', () => {
    expect(rewardOf('0.25')).toBe(0.25);
    expect(rewardOf('-3')).toBe(-3);
    expect(rewardOf('')).toBeNull();
    expect(rewardOf('Infinity')).toBeNull();
    expect(rewardOf('1e999')).toBeNull();
    expect(rewardOf(undefined)).toBeNull();
  });
});
