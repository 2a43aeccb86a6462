import fc from 'fast-check';
import { epochSecondsOf, isoTimestamp } from '../shared/domain/timestamps';

/** Instants from before 1970 to past year 9999, where toISOString changes form. */
const instant = fc.oneof(
  fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }),
  fc.integer({ min: -8.64e15, max: 8.64e15 }),
  fc.double({ min: 0, max: 4e12, noNaN: true }),
);

describe('isoTimestamp', () => {
  it("writes exactly what Date's toISOString writes, in any order of calls", () => {
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 20 }), (instants) => {
        for (const ms of instants) expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the milliseconds of calls within one second apart', () => {
    const second = Date.UTC(2026, 10, 27, 9, 30, 15);
    expect([0, 7, 42, 999].map((ms) => isoTimestamp(second + ms))).toEqual([
      '2026-11-27T09:30:15.000Z',
      '2026-11-27T09:30:15.007Z',
      '2026-11-27T09:30:15.042Z',
      '2026-11-27T09:30:15.999Z',
    ]);
    expect(isoTimestamp(second + 1000)).toBe('2026-11-27T09:30:16.000Z');
  });

  it('refuses what is no time, as Date does', () => {
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
    expect(() => isoTimestamp(8.64e15 + 1)).toThrow(RangeError);
  });
});

describe('epochSecondsOf', () => {
  it('reads back the seconds of every timestamp isoTimestamp writes', () => {
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 20 }), (instants) => {
        for (const ms of instants) expect(epochSecondsOf(isoTimestamp(ms))).toBe(Math.floor(ms / 1000));
      }),
      { numRuns: 500 },
    );
  });

  it('reads other forms and offsets as Date.parse does, whatever was read before', () => {
    const texts = [
      '2026-11-27T09:30:15.123Z',
      '2026-11-27T09:30:15.123+02:00',
      '2026-11-27T09:30:15Z',
      '2026-11-27T09:30:15.1234Z',
      '2026-11-27T09:30:15.12xZ',
      '2026-11-27',
      '2026-13-27T09:30:15.123Z',
      '2026-13-27T09:30:15.456Z',
      'not a time',
      '',
    ];
    for (const text of [...texts, ...texts.reverse()]) {
      expect(epochSecondsOf(text)).toBe(Math.floor(Date.parse(text) / 1000));
    }
  });
});
