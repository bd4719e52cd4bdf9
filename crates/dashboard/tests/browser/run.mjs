// Drives the airlock dashboard in Debian's headless Chromium with playwright-core.
//
//   node run.mjs <base_url> <operator_token> <screenshot_dir>
//
// Run by crates/dashboard/tests/it/browser.rs, which seeds a ledger, serves the
// dashboard and passes the seeded post ids in AIRLOCK_POSTS. Each step asserts on text
// a person would read and saves a screenshot. Exits non-zero on the first failure.
import { args, fail, launch, sees, shooter, step } from "./common.mjs";

const { base, token, shots } = args("run.mjs");
const posts = JSON.parse(process.env.AIRLOCK_POSTS || "{}");
const browser = await launch();
const shot = shooter(shots, { fullPage: true });
const problems = [];
let failed = false;

async function seesNot(page, selector, what) {
  const n = await page.locator(selector).count();
  if (n !== 0) fail(`expected no ${what} on ${page.url()}, found ${n}`);
}

async function textOf(page, selector) {
  return (await page.locator(selector).first().innerText()).trim();
}

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().includes("favicon")) problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));

  await step("an unauthenticated visit lands on the login form", async () => {
    await page.goto(`${base}/`);
    if (!page.url().startsWith(`${base}/login`)) fail(`expected the login page, got ${page.url()}`);
    await sees(page, "Sign in with an operator token");
    await shot(page, "01-login");
  });

  await step("the operator signs in and sees the queue", async () => {
    await page.fill("#token", token);
    await page.click("button:has-text('Sign in')");
    await page.waitForURL(`${base}/`);
    await sees(page, "2 posts need a person");
    await sees(page, "Today");
    await shot(page, "02-queue");
  });

  await step("the operator approves a draft, and an open queue refreshes by itself", async () => {
    const watcher = await context.newPage();
    watcher.on("console", (msg) => {
      if (msg.type() === "error") problems.push(`console (queue tab): ${msg.text()}`);
    });
    await watcher.goto(`${base}/`);
    const drafts = () => textOf(watcher, ".count.st-draft .count-n");
    if ((await drafts()) !== "2") fail(`expected 2 drafts in the queue tab, got ${await drafts()}`);
    await page.goto(`${base}/posts/${posts.draft}`);
    await sees(page, "Mochi has claimed the window seat again.");
    await page.click("button:has-text('Approve')");
    await sees(page, `Approved post #${posts.draft}`);
    const badge = await textOf(page, ".post-head .badge");
    if (badge !== "approved") fail(`expected the badge to say approved, got ${badge}`);
    await shot(page, "03-approved");
    try {
      await watcher.waitForFunction(
        () => document.querySelector(".count.st-draft .count-n").textContent.trim() === "1",
        null,
        { timeout: 10000 },
      );
    } catch {
      fail(`the queue tab did not refresh its counts by itself (still ${await drafts()} drafts)`);
    }
    await watcher.close();
  });

  await step("the inbox shows the evidence before the verdicts", async () => {
    await page.goto(`${base}/posts/${posts.review[0]}`);
    await sees(page, "Did this post go out?");
    await sees(page, "Request sent at");
    await shot(page, "04-needs-review-post");
    await page.click("nav >> text=Needs review");
    await page.waitForURL(`${base}/review`);
    await sees(page, "Request sent at");
    await sees(page, "Idempotency key");
    await sees(page, "simulated timeout after sending");
    await shot(page, "04-review");
  });

  await step("the operator resolves one post each way", async () => {
    const first = page.locator(`#review-${posts.review[0]}`);
    await first.locator("input[name=permalink]").fill("https://drill.example/p/1");
    await first.locator("button:has-text('It went out')").click();
    await sees(page, `Marked post #${posts.review[0]} as published`);
    const second = page.locator(`#review-${posts.review[1]}`);
    await second.locator("button:has-text('It did not go out')").click();
    await sees(page, `Marked post #${posts.review[1]} as not published`);
    await sees(page, "Inbox empty.");
    await shot(page, "05-resolved");
  });

  await step("the operator pauses a channel with a reason", async () => {
    await page.goto(`${base}/`);
    const cats = page.locator("#channel-cats");
    await cats.locator("input[name=reason]").fill("Vet visit this morning");
    await cats.locator("button:has-text('Pause cats')").click();
    await sees(page, "Channel cats paused:");
    await sees(page, "Vet visit this morning");
    await shot(page, "06-paused");
  });

  await step("and resumes it", async () => {
    await page.locator(".banner button:has-text('Resume cats')").click();
    await sees(page, "Resumed channel cats");
    await seesNot(page, ".banner", "pause banner");
    await shot(page, "07-resumed");
  });

  let before;
  await step("the operator publishes the approved post now", async () => {
    before = await textOf(page, "#gauge-cats .gauge-num");
    if (before !== "1 / 5 today") fail(`expected the cats gauge at 1 / 5 today, got ${before}`);
    await page.goto(`${base}/posts/${posts.draft}`);
    await page.click("button:has-text('Publish now')");
    await sees(page, `Published post #${posts.draft} on cats`);
    const badge = await textOf(page, ".post-head .badge");
    if (badge !== "posted") fail(`expected the badge to say posted, got ${badge}`);
    await shot(page, "08-published");
  });

  await step("the quota gauge moved", async () => {
    await page.goto(`${base}/`);
    const after = await textOf(page, "#gauge-cats .gauge-num");
    if (after !== "2 / 5 today") fail(`expected the cats gauge to go from ${before} to 2 / 5 today, got ${after}`);
    await shot(page, "09-gauge");
  });

  let critiqued;
  await step("a critic's reasons show against the rubric, and the second fail, on the revised text, quarantines the draft", async () => {
    critiqued = posts.critique;
    await page.goto(`${base}/posts/${critiqued}`);
    await page.fill("input[name=reason]", "accuracy: nobody can promise a cat");
    await page.click("button:has-text('Reject')");
    await sees(page, `Rejected post #${critiqued}`);
    await sees(page, "nobody can promise a cat");
    await sees(page, "Every claim is true");
    // A revision (one failed review counts per content): the next fail is on new words.
    await page.fill("#edit-text", "Every guest may meet a cat, if the cat agrees! Please respect the cats' own pace.");
    await page.click(".edit-form button[type=submit]");
    await sees(page, `Saved post #${critiqued}`);
    await page.fill("input[name=reason]", "tone: the exclamation reads as pushy");
    await page.click("button:has-text('Reject')");
    await sees(page, `Rejected post #${critiqued}: that was its last failed review`);
    await sees(page, "Quarantined after 2 failed reviews");
    await seesNot(page, "button:has-text('Approve')", "approve button on a quarantined post");
    await shot(page, "10-quarantined");
  });

  await step("the inbox lists the quarantined draft, and the operator releases it", async () => {
    await page.click("nav >> text=Needs review");
    await page.waitForURL(`${base}/review`);
    const item = page.locator(`#quarantined-${critiqued}`);
    await item.getByText("the exclamation reads as pushy").waitFor({ state: "visible", timeout: 5000 });
    await item.locator("button:has-text('Release to its writer')").click();
    await sees(page, `Released post #${critiqued}`);
    await sees(page, "None quarantined.");
    await shot(page, "11-released");
  });

  await step("the pages read on a phone", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    await sees(page, "Inbox empty.");
    await shot(page, "12-phone-queue");
    await page.goto(`${base}/posts/${posts.review[0]}`);
    await sees(page, "https://drill.example/p/1");
    await shot(page, "13-phone-post");
  });

  await step("signing out ends the session", async () => {
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(`${base}/`);
    await page.click("button:has-text('Sign out')");
    await sees(page, "You are signed out.");
    await page.goto(`${base}/`);
    if (!page.url().startsWith(`${base}/login`)) fail(`expected the login page after signing out, got ${page.url()}`);
  });

  if (problems.length) fail(`the browser reported problems:\n${problems.join("\n")}`);
  console.log("browser steps passed");
} catch (err) {
  failed = true;
  console.error(`FAILED: ${err.message}`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
