/**
 * The console's building blocks without a browser: escaping (HTML, terminal escapes, JSON data
 * blocks), the chart's buckets by status class, and CSV fields a spreadsheet cannot run.
 */
import fc from 'fast-check';
import { escapeHtml, html, jsonBlock } from '../../lib/console/html';
import { bucketRecords, csvField, csvRow } from '../../lib/console/usage-data';

describe('html', () => {
  it('escapes every interpolated value and shows control characters as text', () => {
    const hostile = '<script>alert(1)</script>"\'&\u001b[31m\u202e';
    expect(html`<td title="${hostile}">${hostile}</td>`.markup).toBe(
      '<td title="&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\x1b[31m\\u{202e}">' +
        '&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\x1b[31m\\u{202e}</td>',
    );
    expect(html`<p>${html`<b>${'<i>'}</b>`}</p>`.markup).toBe('<p><b>&lt;i&gt;</b></p>');
  });

  it('never lets any string produce markup', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        // eslint-disable-next-line no-control-regex
        expect(escapeHtml(value)).not.toMatch(/[<>"'\u0000-\u0008\u000b-\u001f\u007f]/);
      }),
    );
  });

  it('keeps a JSON data block from closing its script element', () => {
    const block = jsonBlock('data', { path: '</script><script>alert(1)</script>&' }).markup;
    expect(block.match(/<\/script>/g)).toHaveLength(1);
    const json = block.slice(block.indexOf('>') + 1, block.lastIndexOf('</script>'));
    expect(JSON.parse(json)).toEqual({ path: '</script><script>alert(1)</script>&' });
  });
});

describe('bucketRecords', () => {
  it('counts calls per hour by status class, every hour of the period present, oldest first', () => {
    const since = new Date('2026-11-22T10:30:00Z');
    const now = new Date('2026-11-22T13:05:00Z');
    const { starts, counts } = bucketRecords(
      [
        { timestamp: '2026-11-22T10:45:00Z', status: 200 },
        { timestamp: '2026-11-22T10:59:59Z', status: 404 },
        { timestamp: '2026-11-22T12:00:00Z', status: 503 },
        { timestamp: '2026-11-22T13:01:00Z', status: 304 },
        { timestamp: '2026-11-22T13:02:00Z', status: 201 },
        { timestamp: '2026-11-22T09:00:00Z', status: 200 }, // before the period
      ],
      since,
      now,
      'hour',
    );
    expect(starts).toEqual([
      '2026-11-22T10:00:00.000Z',
      '2026-11-22T11:00:00.000Z',
      '2026-11-22T12:00:00.000Z',
      '2026-11-22T13:00:00.000Z',
    ]);
    expect(counts).toEqual({ '2xx': [1, 0, 0, 1], '3xx': [0, 0, 0, 1], '4xx': [1, 0, 0, 0], '5xx': [0, 0, 1, 0] });
  });

  it('counts per UTC day', () => {
    const { starts, counts } = bucketRecords(
      [{ timestamp: '2026-11-21T23:59:59Z', status: 200 }],
      new Date('2026-11-20T12:00:00Z'),
      new Date('2026-11-22T01:00:00Z'),
      'day',
    );
    expect(starts).toEqual(['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z']);
    expect(counts['2xx']).toEqual([0, 1, 0]);
  });
});

describe('CSV', () => {
  it('quotes what needs quoting and defuses formulas', () => {
    expect(csvRow(['a,b', 'say "hi"', 200, '=HYPERLINK("x")', '/api/v1/branch'])).toBe(
      '"a,b","say ""hi""",200,"\'=HYPERLINK(""x"")",/api/v1/branch\r\n',
    );
    expect(csvField('-1')).toBe("'-1");
    expect(csvField(-1)).toBe('-1');
  });
});
