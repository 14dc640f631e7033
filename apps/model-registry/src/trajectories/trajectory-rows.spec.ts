import { trajectoryRows } from './trajectory-rows';

describe('trajectoryRows', () => {
  it('makes one row per trajectory, with its group and position, the group keys beside it', () => {
    const rows = trajectoryRows([
      { trajectories: [{ reward: 1, messages_and_choices: [{ role: 'user', content: 'hi' }] }, { reward: 0.5 }], metadata: { task: 'a' } },
      { trajectories: [{ metrics: { turns: 2 } }] },
    ]);
    expect(rows.map((r) => [r.groupIndex, r.trajectoryIndex, r.reward])).toEqual([
      [0, 0, 1],
      [0, 1, 0.5],
      [1, 0, 0],
    ]);
    expect(rows[0].groupData).toEqual({ metadata: { task: 'a' } });
    expect(rows[0].data['messages_and_choices']).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('counts the bytes of each trajectory as UTF-8 JSON', () => {
    const [row] = trajectoryRows([{ trajectories: [{ reward: 1, note: 'é' }] }]);
    expect(row.bytes).toBe(Buffer.byteLength('{"reward":1,"note":"é"}'));
  });

  it('skips what is not a group or a trajectory', () => {
    expect(trajectoryRows('nope')).toEqual([]);
    expect(trajectoryRows([null, { trajectories: [3, null] }, { no: [] }])).toEqual([]);
  });
});
