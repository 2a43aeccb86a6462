/**
 * The console's building blocks without a browser: escaping (HTML, terminal escapes, JSON data
 * blocks), the chart's buckets by status class, and CSV fields a spreadsheet cannot run.
 */
import fc from 'fast-check';
import { html, jsonBlock } from '../../lib/console/layout';
import { localPath, MAX_SESSIONS, Sessions } from '../../lib/console/session';
import { csvField, csvRow } from '../../lib/console/usage-data';

describe('html', () => {
  it('escapes every interpolated value and shows control characters as text', () => {
    const hostile = '<script>alert(1)</script>"\'&\u001b[31m\u202e';
    expect(html`<td title="${hostile}">${hostile}</td>`.toString()).toBe(
      '<td title="&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\x1b[31m\\u{202e}">' +
        '&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\x1b[31m\\u{202e}</td>',
    );
    expect(html`<p>${html`<b>${'<i>'}</b>`}</p>`.toString()).toBe('<p><b>&lt;i&gt;</b></p>');
  });

  it('never lets any string produce markup', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        // eslint-disable-next-line no-control-regex
        expect(html`${value}`.toString()).not.toMatch(/[<>"'\u0000-\u0008\u000b-\u001f\u007f]/);
      }),
    );
  });

  it('keeps a JSON data block from closing its script element', () => {
    const block = jsonBlock('data', { path: '</script><script>alert(1)</script>&' }).toString();
    expect(block.match(/<\/script>/g)).toHaveLength(1);
    const json = block.slice(block.indexOf('>') + 1, block.lastIndexOf('</script>'));
    expect(JSON.parse(json)).toEqual({ path: '</script><script>alert(1)</script>&' });
  });
});

describe('CSV', () => {
  it('quotes what needs quoting and defuses formulas', () => {
    expect(csvRow(['a,b', 'say "hi"', 200, '=HYPERLINK("x")', '/api/v1/branch'])).toBe(
      '"a,b","say ""hi""",200,"\'=HYPERLINK(""x"")",/api/v1/branch\r\n',
    );
    expect(csvField('-1')).toBe("'-1");
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('\tcmd')).toBe("'\tcmd");
    expect(csvField(-1)).toBe('-1');
  });

  it('writes NUL, terminal escapes and bidi overrides as visible text, and a missing value as empty', () => {
    expect(csvField('a\u0000b\u001b[31m\u202ec\u2066')).toBe('a\\x00b\\x1b[31m\\u{202e}c\\u{2066}');
    expect(csvField('\r=1')).toBe('\\x0d=1');
    expect(csvField(undefined)).toBe('');
  });
});

describe('redirects', () => {
  it('keep every target on the console: a path of its own, never another host', () => {
    expect(localPath('/branches/br_demo/keys?q=x')).toBe('/branches/br_demo/keys?q=x');
    for (const outside of [
      '//evil.example/',
      '/\\evil.example/',
      '/\t/evil.example/',
      '/\n/evil.example',
      'https://evil.example/',
      'evil.example',
      '',
    ]) {
      expect(localPath(outside)).toBe('/');
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const target = new URL(localPath(value), 'http://127.0.0.1:3001');
        expect(target.origin).toBe('http://127.0.0.1:3001');
      }),
    );
  });
});

describe('sessions', () => {
  const cookieOf = (sessions: Sessions, id: string) => `${sessions.cookieName}=${id}`;

  it(`keep at most ${MAX_SESSIONS}, dropping the oldest first`, () => {
    const sessions = new Sessions(3001);
    const created = Array.from({ length: MAX_SESSIONS + 5 }, () => sessions.create());
    expect(sessions.size).toBe(MAX_SESSIONS);
    expect(sessions.fromCookies(cookieOf(sessions, created[4]!.id))).toBeUndefined();
    expect(sessions.fromCookies(cookieOf(sessions, created[5]!.id))).toBe(created[5]);
  });

  it('issue at most 100 one-use form ids per session, each accepted once', () => {
    const sessions = new Sessions(3001);
    const session = sessions.create();
    const ids = Array.from({ length: 105 }, () => sessions.issueForm(session));
    expect(session.forms.size).toBe(100);
    expect(sessions.consumeForm(session, ids[0])).toBe(false);
    expect(sessions.consumeForm(session, ids[104])).toBe(true);
    expect(sessions.consumeForm(session, ids[104])).toBe(false);
  });
});
