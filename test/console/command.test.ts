/**
 * `branch-api console` as an operator runs it: a child process printing the console's link,
 * warning when it listens beyond loopback, stopping cleanly on Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI, PROJECT_ROOT } from '../support/cli';
import { exposureWarning } from '../../lib/console/command';

const run = (args: string[]) => {
  const child = spawn(process.execPath, [CLI, 'console', ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, CONSOLE_PORT: '0' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => stdout.includes('Press Ctrl-C') && resolve());
    void exited.then(() => reject(new Error(`console exited early: ${stderr}`)));
  });
  return { child, ready, exited, output: () => ({ stdout, stderr: stderr.replace(/^npm warn.*\n/gm, '') }) };
};

it('prints its link on 127.0.0.1 with a launch token, serves the keys page, and stops on Ctrl-C', async () => {
  const console = run([]);
  try {
    await console.ready;
    const url = /Settings console: (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43})\n/.exec(console.output().stdout)?.[1];
    expect(url).toBeDefined();
    expect(console.output().stderr).toBe('');
    const launch = await fetch(url!, { redirect: 'manual' });
    expect(launch.status).toBe(303);
    const cookie = launch.headers.get('set-cookie')!.split(';')[0]!;
    const home = await fetch(new URL('/', url), { headers: { cookie } });
    expect(await home.text()).toContain('Choose a branch');
    // Enter in the terminal prints a new launch link, which opens a second session.
    console.child.stdin.write('\n');
    await new Promise<void>((resolve) => console.child.stdout.on('data', () => resolve()));
    const links = [...console.output().stdout.matchAll(/Settings console: (\S+)\n/g)].map((match) => match[1]!);
    expect(links).toHaveLength(2);
    expect((await fetch(links[1]!, { redirect: 'manual' })).headers.get('set-cookie')).toMatch(/HttpOnly/);
    console.child.kill('SIGINT');
    expect((await console.exited)[0]).toBe(0);
  } finally {
    console.child.kill('SIGKILL');
  }
});

// Checked without listening beyond loopback: tests listen on 127.0.0.1 only.
it('warns when --host is not loopback', () => {
  expect(exposureWarning('0.0.0.0')).toMatch(
    /^warning: the settings console is listening on 0\.0\.0\.0, not only on this machine/,
  );
  expect(exposureWarning('192.168.1.5\u001b[2J')).toContain('192.168.1.5\\x1b[2J');
  for (const host of ['127.0.0.1', 'localhost', '::1']) expect(exposureWarning(host)).toBeUndefined();
});
