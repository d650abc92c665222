import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import type { Test } from 'tap';

/** Debian's Chromium, which `.ci/run` installs (apt-get install chromium). */
export const chromiumPath = '/usr/bin/chromium';

/** A tap `skip` value: false where Chromium is installed, else the reason. */
export const skipWithoutChromium = existsSync(chromiumPath)
  ? false
  : `${chromiumPath} not found: install Debian's chromium (apt-get install chromium) to run the real-browser test`;

/**
 * Headless Chromium with a fresh profile, closed and removed when the test ends. The flags keep
 * it from reaching for Google's hosts, which this machine's closed network refuses.
 */
export async function launchChromium(
  t: Test,
  options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {},
): Promise<BrowserContext> {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'tessera-chromium-'));
  // Playwright runs a persistent context for a given profile folder: a fresh one per run.
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    ...options,
  });
  t.teardown(async () => {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  });
  return context;
}
