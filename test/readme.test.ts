/**
 * The README describes the code where it lists routes and prints the banner (the banner is
 * checked against a real start in test/local/serve.test.ts); it stays a first page.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { README_FILE } from '../lib/project-paths';
import { routes } from '../shared/api/routes';
import { readmeBlock } from './support/readme';

it('lists exactly the route table: each route once, in order', () => {
  const rows = readmeBlock('routes')
    .split('\n')
    .filter((line) => /^\| GET /.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim().replaceAll('`', '')));
  expect(rows.map(([, method, path]) => `${method} ${path}`)).toEqual(
    routes.map((route) => `${route.method} ${route.path}`),
  );
});

it('is at most 250 lines: the rest lives in docs/', () => {
  expect(readFileSync(README_FILE, 'utf8').split('\n').length).toBeLessThanOrEqual(250);
});

it('shows the jest example as the file that runs it: test/readme-example.test.ts, whole', () => {
  const file = readFileSync(join(dirname(README_FILE), 'test', 'readme-example.test.ts'), 'utf8');
  expect(`${readmeBlock('jest example')}\n`).toBe(file);
});
