import { LoadBoard, PEER_FORGOTTEN_AFTER_MS } from './peer-loads';

describe('LoadBoard', () => {
  it('leaves the next completion to a peer that holds fewer sequences and is asking for work', () => {
    const board = new LoadBoard('me');
    board.record({ instance: 'peer', held: 2, asking: true }, 0);
    expect(board.lighterPeerAsking(3, 10)).toBe(true);
    // Equal loads race as before: someone has to ask.
    expect(board.lighterPeerAsking(2, 10)).toBe(false);
    expect(board.lighterPeerAsking(1, 10)).toBe(false);
  });

  it('does not wait for a lighter peer that is not asking (busy admitting, loading weights or full)', () => {
    const board = new LoadBoard('me');
    board.record({ instance: 'peer', held: 0, asking: false }, 0);
    expect(board.lighterPeerAsking(5, 10)).toBe(false);
    board.record({ instance: 'peer', held: 0, asking: true }, 20);
    expect(board.lighterPeerAsking(5, 30)).toBe(true);
  });

  it('ignores its own announcements', () => {
    const board = new LoadBoard('me');
    board.record({ instance: 'me', held: 0, asking: true }, 0);
    expect(board.lighterPeerAsking(5, 10)).toBe(false);
  });

  it('forgets a peer it has not heard from for a while (a worker that stopped)', () => {
    const board = new LoadBoard('me');
    board.record({ instance: 'peer', held: 0, asking: true }, 0);
    expect(board.lighterPeerAsking(4, PEER_FORGOTTEN_AFTER_MS)).toBe(true);
    expect(board.lighterPeerAsking(4, PEER_FORGOTTEN_AFTER_MS + 1)).toBe(false);
    // A later announcement brings it back.
    board.record({ instance: 'peer', held: 1, asking: true }, PEER_FORGOTTEN_AFTER_MS + 2);
    expect(board.lighterPeerAsking(4, PEER_FORGOTTEN_AFTER_MS + 3)).toBe(true);
  });
});
