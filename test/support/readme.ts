/** The README's blocks that describe code, read for the tests that hold them to it. */
import { readFileSync } from 'node:fs';
import { README_FILE } from '../../lib/project-paths';

/** What stands between `<!-- name: … -->` and `<!-- end of name -->`, without a code fence. */
export const readmeBlock = (name: string): string => {
  const text = readFileSync(README_FILE, 'utf8');
  const start = text.indexOf(`<!-- ${name}:`);
  const end = text.indexOf(`<!-- end of ${name} -->`, start);
  if (start === -1 || end === -1) throw new Error(`README.md has no ${name} block`);
  const body = text.slice(text.indexOf('-->', start) + 3, end).trim();
  return body.replace(/^```\w*\n/, '').replace(/\n```$/, '');
};

/** The banner with what varies from run to run (ports, folders, token, key, times) written alike. */
export const normalizeBanner = (banner: string): string =>
  banner
    .trim()
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .replace(/\S*\/branch-api-[\w…]+\//g, '<tmp>/')
    .replace(/token=\S+/g, 'token=<token>')
    .replace(/wsk_\S+/g, 'wsk_<key>')
    .replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>');
