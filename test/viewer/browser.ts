import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

/** Debian's chromium; Playwright's own browser download cannot be reached from these machines. */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless chromium. Missing, it fails the test (never skips): npm test installs it (scripts/test-prerequisites.mjs). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the viewer tests need Debian's chromium (apt-get install -y chromium)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/** One headless chromium for a test file: launched before its first test, closed after its last. */
export function sharedChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (browser === undefined) throw new Error("chromium is not running (used outside a test?)");
    return browser;
  };
}

/** Everything a page did that a test may want to see: requests, console errors (CSP reports), page errors. */
export interface PageLog {
  requests: string[];
  consoleErrors: string[];
  pageErrors: string[];
}

export function watch(page: Page): PageLog {
  const log: PageLog = { requests: [], consoleErrors: [], pageErrors: [] };
  page.on("request", (request) => log.requests.push(request.url()));
  page.on("console", (message) => {
    if (message.type() === "error") log.consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => log.pageErrors.push(String(error)));
  return log;
}
