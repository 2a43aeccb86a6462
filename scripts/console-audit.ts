/**
 * What the console's browser tests and screenshot script check on every page: axe-core's
 * violations (serious and critical ones fail), the page's width against the window's (no
 * sideways scrolling) and, on a phone, controls smaller than 44 × 44 px.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.filename).resolve('axe-core/axe.min.js'), 'utf8');

export interface PageAudit {
  url: string;
  /** `document.documentElement.scrollWidth`: at most `innerWidth` when nothing scrolls sideways. */
  scrollWidth: number;
  innerWidth: number;
  /** axe-core violations of serious or critical impact: `rule (n nodes)`. */
  serious: string[];
  /** Every violation axe-core reported, any impact. */
  all: string[];
  /** Accessible names that more than one control on the page has (`role "name"`). */
  duplicateNames: string[];
}

/** Roles a person operates: each needs a name of its own ("Revoke key ‹name›", not "Revoke"). */
const CONTROL_ROLES = new Set('link button textbox searchbox combobox checkbox radio DisclosureTriangle'.split(' '));

/** Controls' accessible names as Chromium computes them (its accessibility tree), repeated ones only. */
const duplicateControlNames = async (page: Page): Promise<string[]> => {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
      nodes: { ignored: boolean; role?: { value: string }; name?: { value: string } }[];
    };
    const names = nodes
      .filter((node) => !node.ignored && CONTROL_ROLES.has(node.role?.value ?? ''))
      .map((node) => `${node.role!.value} "${node.name?.value ?? ''}"`);
    return [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  } finally {
    await cdp.detach();
  }
};

interface AxeResult {
  violations: { id: string; impact: string | null; nodes: unknown[] }[];
}

/**
 * Runs axe-core in the page through the DevTools protocol (the page's CSP forbids an injected
 * script tag, and must stay on), and measures its width.
 */
export const auditPage = async (page: Page): Promise<PageAudit> => {
  await page.evaluate(AXE_SOURCE);
  const { violations, scrollWidth, innerWidth } = await page.evaluate(async () => {
    const browser = globalThis as unknown as {
      axe: { run(context: unknown, options: unknown): Promise<AxeResult> };
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    const result = await browser.axe.run(browser.document, { resultTypes: ['violations'] });
    return {
      violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })),
      scrollWidth: browser.document.documentElement.scrollWidth,
      innerWidth: browser.innerWidth,
    };
  });
  const describe = (v: { id: string; impact: string | null; nodes: number }) => `${v.id} [${v.impact}] (${v.nodes})`;
  return {
    url: page.url(),
    scrollWidth,
    innerWidth,
    serious: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map(describe),
    all: violations.map(describe),
    duplicateNames: await duplicateControlNames(page),
  };
};

/**
 * Controls outside running text (a paragraph's links) smaller than 44 × 44 px (WCAG 2.5.5), as
 * `TAG "name" W×H`; a checkbox's target is its label (clicking it ticks the box).
 */
export const smallTargets = (page: Page): Promise<string[]> =>
  page.locator('a, button, select, input:not([type="hidden"]), summary').evaluateAll((controls) =>
    controls
      .filter((c) => !c.closest('p, small') && c.getClientRects().length > 0)
      .map((c) => ({ c, box: (c.closest('label:has(> input[type="checkbox"])') ?? c).getBoundingClientRect() }))
      .filter(({ box }) => box.width < 44 || box.height < 44)
      .map(
        ({ c, box }) =>
          `${c.tagName} "${(c.getAttribute('aria-label') ?? c.textContent ?? '').trim().slice(0, 40)}" ${Math.round(box.width)}×${Math.round(box.height)}`,
      ),
  );
