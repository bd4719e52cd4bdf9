// What every browser script shares: its arguments, Debian's headless Chromium, and the
// small steps a script asserts with. Imported by run.mjs, compose.mjs and desk.mjs.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

// `node <script> <base_url> <operator_token> <screenshot_dir>`, the directory made.
export function args(script) {
  const [base, token, shots] = process.argv.slice(2);
  if (!base || !token || !shots) {
    console.error(`usage: node ${script} <base_url> <operator_token> <screenshot_dir>`);
    process.exit(2);
  }
  mkdirSync(shots, { recursive: true });
  return { base, token, shots };
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
    ],
  });
}

export function fail(message) {
  throw new Error(message);
}

// Saves screenshots into `shots`: the whole page, or only what the viewport shows (so
// the files the docs keep stay small).
export function shooter(shots, { fullPage = false } = {}) {
  return async (page, name) => {
    await page.screenshot({ path: join(shots, `${name}.png`), fullPage });
    console.log(`  screenshot ${name}.png`);
  };
}

// Waits until the text is visible on the page (within `where`).
export async function sees(page, text, where = "body") {
  try {
    await page.locator(where).getByText(text, { exact: false }).first().waitFor({ state: "visible", timeout: 5000 });
  } catch {
    fail(`expected to see ${JSON.stringify(text)} in ${where} on ${page.url()}`);
  }
}

export async function step(name, body) {
  console.log(`step: ${name}`);
  await body();
}
