// The operator's desk in Debian's headless Chromium with playwright-core: signing in
// through a forwarded port, the tokens page and the audit export.
//
//   node desk.mjs <base_url> <operator_token> <screenshot_dir>
//
// Run by crates/dashboard/tests/it/browser_desk.rs, which serves the dashboard behind
// the server's Host/Origin policy and reaches it only through a TCP proxy on another
// port (base_url): a forwarded port, as `ssh -L` or `docker run -p` make one. The
// script signs in, is refused, reads the advice on the page and prints it as
//
//   ADVICE public_url = "http://127.0.0.1:PORT"
//
// then waits for the line `restarted` on its standard input: the test has restarted
// the server with that setting. It signs in again, creates a token (its secret shown
// once), revokes it after the confirmation page, and downloads the audit export.
// Screenshots of the tokens page at desktop (1280) and phone (390) widths land in the
// screenshot directory. Exits non-zero on the first failure.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { args, fail, launch, sees, shooter, step } from "./common.mjs";

const { base, token, shots } = args("desk.mjs");
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const browser = await launch();
const shot = shooter(shots);
const problems = [];
let failed = false;

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.on("console", (msg) => {
    const text = msg.text();
    // The refused form's page answers 403 on purpose.
    if (msg.type() === "error" && !text.includes("favicon") && !text.includes("403")) problems.push(`console: ${text}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));

  let advice;
  await step("through a forwarded port, the sign-in page says it will be refused", async () => {
    await page.goto(`${base}/login`);
    await sees(page, "Signing in here will be refused");
    await sees(page, `public_url = "${base}"`);
    await shot(page, "desk-forwarded-login");
  });

  await step("signing in anyway answers a page, not JSON, with what to set", async () => {
    await page.fill("#token", token);
    await page.click("button:has-text('Sign in')");
    await sees(page, `airlock is not set up for ${base}`);
    const body = await page.locator("body").innerText();
    if (body.includes("forbidden_origin")) fail(`the refusal is JSON:\n${body}`);
    advice = (await page.locator("pre.config").first().innerText()).split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("["));
    if (advice.length !== 1 || !advice[0].startsWith("public_url")) fail(`unexpected advice ${JSON.stringify(advice)}`);
    await shot(page, "desk-forwarded-refused");
  });

  await step("the test restarts the server with the advice", async () => {
    console.log(`ADVICE ${advice[0]}`);
    const { value, done } = await stdin.next();
    if (done || value.trim() !== "restarted") fail(`expected "restarted" on stdin, got ${JSON.stringify(value)}`);
  });

  await step("and signing in through the forwarded port works", async () => {
    await page.goto(`${base}/login`);
    const warned = await page.locator("#origin-warning").count();
    if (warned !== 0) fail("the sign-in page still warns after the restart");
    await page.fill("#token", token);
    await page.click("button:has-text('Sign in')");
    await page.waitForURL(`${base}/`);
    await sees(page, "Queue");
  });

  await step("the tokens page lists roles, last use and live drafts", async () => {
    await page.click("nav >> text=Tokens");
    await page.waitForURL(`${base}/tokens`);
    await sees(page, "All tokens");
    const agent = page.locator("#token-agent");
    await sees(page, "writer", "#token-agent");
    const drafts = (await agent.locator(".token-drafts").innerText()).replace("Live drafts", "").trim();
    if (drafts !== "2") fail(`expected 2 live drafts for agent, got ${JSON.stringify(drafts)}`);
    await sees(page, "you", "#token-ops");
    await shot(page, "tokens-desktop");
  });

  let secret;
  await step("a new token's secret is shown once", async () => {
    await page.fill("#token-name", "newsbot");
    await page.check("input[name=role][value=writer]");
    await page.check("input[name=role][value=critic]");
    await page.click("button:has-text('Create token')");
    await sees(page, "Token newsbot created");
    secret = (await page.locator("#secret").innerText()).trim();
    if (!/^alk_[0-9a-f]{64}$/.test(secret)) fail(`unexpected secret ${JSON.stringify(secret)}`);
    await shot(page, "tokens-created");
    await page.click("a:has-text('Done: it is copied')");
    await page.waitForURL(`${base}/tokens`);
    const html = await page.content();
    if (html.includes(secret)) fail("the secret is shown again");
    await page.reload();
    if ((await page.content()).includes(secret)) fail("the secret is shown again after a reload");
  });

  await step("revoking asks first", async () => {
    await page.locator("#token-newsbot a:has-text('Revoke')").click();
    await sees(page, "Revoke token newsbot?");
    await sees(page, "Its passes count for nobody");
    await shot(page, "tokens-revoke");
    await page.click("button:has-text('Revoke newsbot')");
    await page.waitForURL(`${base}/tokens`);
    await sees(page, "Revoked token newsbot");
    await sees(page, "revoked", "#token-newsbot");
  });

  await step("the audit export downloads as CSV", async () => {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.click("button:has-text('Download CSV')"),
    ]);
    const text = readFileSync(await download.path(), "utf8");
    if (!text.startsWith("event_id,at,post_id,kind,from,to,actor,note\r\n")) fail(`unexpected CSV start: ${text.slice(0, 80)}`);
    if (!text.includes("token:agent")) fail("the export does not name the agent");
    console.log(`  audit.csv: ${text.split("\r\n").length - 2} events`);
  });

  await step("the tokens page reads on a phone", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/tokens`);
    await sees(page, "All tokens");
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > 390) fail(`the page scrolls sideways on a phone (${width}px wide)`);
    await shot(page, "tokens-phone");
  });

  if (problems.length) fail(`the browser reported problems:\n${problems.join("\n")}`);
  console.log("desk steps passed");
} catch (err) {
  failed = true;
  console.error(`FAILED: ${err.message}`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
