/** Runs the real `branch-api` CLI in a child process against this test file's tables. */
import { execFile } from 'node:child_process';
import { CLI_FILE, PROJECT_ROOT } from '../../lib/project-paths';

export { PROJECT_ROOT };
export const CLI = CLI_FILE;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

export const runCli = (args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: PROJECT_ROOT, env: { ...process.env, ...env }, timeout: 20_000 },
      (error, stdout, stderr) => {
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, json });
      },
    );
  });
