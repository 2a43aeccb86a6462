/**
 * The Chromium that browser tests and the screenshot and page-height scripts drive: Debian's package
 * (`apt-get install -y chromium`) or CHROMIUM_PATH, through playwright-core (Playwright's own
 * browser download is not used). Each launch gets a fresh profile (Playwright's temporary
 * user-data-dir) and no background networking, so a run never reaches beyond the pages it opens.
 */
import { existsSync } from 'node:fs';
import { chromium, type Page } from 'playwright-core';

/** The Chromium found on this machine, if any: CHROMIUM_PATH when set (and only it), else Debian's. */
export const CHROMIUM_PATH = ((path: string) => (existsSync(path) ? path : undefined))(
  process.env.CHROMIUM_PATH || '/usr/bin/chromium',
);

// Playwright's own switches already turn off the sandbox, background networking, updates and sync.
const CHROMIUM_ARGS = ['--disable-gpu', '--disable-quic'];

export type ChromiumSession = Awaited<ReturnType<typeof launchChromium>>;

/** Headless Chromium with a fresh profile, and one browser context of this viewport. */
export const launchChromium = async (
  viewport = { width: 1280, height: 900 },
  /** e.g. `{ timezoneId: 'Asia/Kolkata' }`, to see times as a reader elsewhere does. */
  options: { timezoneId?: string; locale?: string } = {},
) => {
  if (!CHROMIUM_PATH)
    throw new Error('No Chromium: install it with "apt-get install -y chromium" or set CHROMIUM_PATH');
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  return { context: await browser.newContext({ viewport, ...options }), close: () => browser.close() };
};

/**
 * A page of its own Chromium for a script, and what it saw that a page of `origin` must never do:
 * request anything outside it, log an error or throw. `done` closes the browser, prints the
 * problems and fails the run if there were any.
 */
export const openPage = async (origin: string, viewport?: { width: number; height: number }) => {
  const session = await launchChromium(viewport);
  const page: Page = await session.context.newPage();
  const problems: string[] = [];
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(origin) && !url.startsWith('data:')) problems.push(`requested outside ${origin}: ${url}`);
  });
  page.on('console', (message) => message.type() === 'error' && problems.push(`console error: ${message.text()}`));
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return {
    page,
    problems,
    done: async () => {
      await session.close();
      if (problems.length === 0) return;
      console.error(problems.join('\n'));
      process.exitCode = 1;
    },
  };
};
