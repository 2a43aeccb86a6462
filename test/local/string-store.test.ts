/**
 * The embedded DynamoDB's recent values (lib/local/string-store.ts): a value equal to one stored
 * moments before is stored as that string, so an index entry and its item are held once; what it
 * keeps to find them is bounded in count and in length.
 */
import { RECENT_VALUES, RecentValues } from '../../lib/local/string-store';

// A fresh string of the same content each time (not one literal the engine could share itself).
const valueOf = (id: number, length = 40) => `{"request_id":{"S":"${id}"}}`.padEnd(length, ' ');

describe('RecentValues', () => {
  it('shares a value stored again after other values, once per pair', () => {
    const recent = new RecentValues();
    recent.share(valueOf(1));
    for (let other = 2; other < 50; other += 1) recent.share(valueOf(other));
    expect(recent.share(valueOf(1))).toBe(valueOf(1));
    expect(recent.shared).toBe(1);
    // The pair has met: a third equal value is kept anew, not counted as held once more.
    recent.share(valueOf(1));
    expect(recent.shared).toBe(1);
  });

  it(`keeps at most ${RECENT_VALUES.count} values, the newest`, () => {
    const recent = new RecentValues();
    const past = RECENT_VALUES.count + 10;
    for (let id = 0; id < past; id += 1) recent.share(valueOf(id));
    expect(recent.size).toBe(RECENT_VALUES.count);
    recent.share(valueOf(0)); // let go past the bound: kept anew
    expect(recent.shared).toBe(0);
    recent.share(valueOf(past - 1)); // the newest is still there
    expect(recent.shared).toBe(1);
  });

  it(`keeps no value longer than ${RECENT_VALUES.maxChars} characters`, () => {
    const recent = new RecentValues();
    const long = valueOf(7, RECENT_VALUES.maxChars + 1);
    expect(recent.share(long)).toBe(long);
    expect(recent.size).toBe(0);
    recent.share(valueOf(7, RECENT_VALUES.maxChars + 1));
    expect(recent.shared).toBe(0);
    recent.share(valueOf(8, RECENT_VALUES.maxChars));
    expect(recent.size).toBe(1);
  });
});
