/**
 * The Chromium that browser tests and the screenshot and page-height scripts drive: Debian's package
 * (`apt-get install -y chromium`) or CHROMIUM_PATH, through playwright-core (Playwright's own
 * browser download is not used). Each launch gets a fresh user-data-dir and no background
 * networking, so a run never reaches beyond the pages it opens.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** The Chromium found on this machine, if any: CHROMIUM_PATH when set (and only it), else Debian's. */
export const CHROMIUM_PATH = ((path: string) => (existsSync(path) ? path : undefined))(
  process.env.CHROMIUM_PATH || '/usr/bin/chromium',
);

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export interface ChromiumSession {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile (a persistent context is how it gets its own user-data-dir). */
export const launchChromium = async (
  viewport = { width: 1280, height: 900 },
  /** e.g. `{ timezoneId: 'Asia/Kolkata' }`, to see times as a reader elsewhere does. */
  options: { timezoneId?: string; locale?: string } = {},
): Promise<ChromiumSession> => {
  if (!CHROMIUM_PATH)
    throw new Error('No Chromium: install it with "apt-get install -y chromium" or set CHROMIUM_PATH');
  const userDataDir = await mkdtemp(join(tmpdir(), 'branch-api-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport,
    ...options,
    args: CHROMIUM_ARGS,
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
};
