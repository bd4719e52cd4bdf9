// Drives the compose page and the calendar in Debian's headless Chromium with
// playwright-core.
//
//   node compose.mjs <base_url> <operator_token> <screenshot_dir>
//
// Run by crates/dashboard/tests/it/browser_compose.rs, which serves a ledger with the
// channel `inn` (New York's zone; every post must carry "#inn" and stay within 80
// characters). An operator composes a post that breaks the rules and sees it before
// saving, fixes and saves it, finds it on the calendar and moves it. Screenshots of
// compose and of the calendar's week and month, at desktop (1280) and phone (390)
// widths, land in the screenshot directory. Exits non-zero on the first failure.
import { args, fail, launch, sees, shooter, step } from "./common.mjs";

const { base, token, shots } = args("compose.mjs");
const browser = await launch();
const shot = shooter(shots);
const problems = [];
let failed = false;

const BROKEN = "Breakfast is served from seven, with fresh bread.";
const FIXED = "Breakfast is served from seven, with fresh bread. #inn";

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().includes("favicon")) problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));

  await step("the operator signs in", async () => {
    await page.goto(`${base}/login`);
    await page.fill("#token", token);
    await page.click("button:has-text('Sign in')");
    await page.waitForURL(`${base}/`);
  });

  let postId;
  await step("compose shows the channel's rules and, as the operator types, the violation", async () => {
    await page.click("nav >> text=Compose");
    await page.waitForURL(`${base}/compose`);
    await page.selectOption("#compose-channel", "inn");
    // The script checks the new channel by itself: its rules replace the first one's.
    await sees(page, "Rules of inn", "#compose-check");
    await sees(page, "Must contain “#inn”", "#compose-check");
    await page.fill("#p1-text", BROKEN);
    await page.fill("#p1-url-1", "https://inn.example/bread.jpg");
    await page.fill("#p1-alt-1", "Fresh bread on the counter");
    await page.fill("#compose-date", "2026-12-03");
    await page.fill("#compose-time", "07:30");
    await sees(page, 'the text lacks the required phrase "#inn"', "#compose-check");
    await sees(page, "no critic can approve it", "#compose-check");
    await sees(page, "49 / 80 characters", "#compose-check");
    await sees(page, "2026-12-03 07:30 EST", "#compose-check");
    await sees(page, "Fresh bread on the counter", "#compose-check");
    await page.locator("#compose-time").blur();
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, "compose-desktop");
  });

  await step("the Check button gives the same answer and keeps what was typed", async () => {
    await page.click("button.btn:has-text('Check')");
    await page.waitForURL(`${base}/compose`);
    await sees(page, 'the text lacks the required phrase "#inn"', "#compose-check");
    const text = await page.inputValue("#p1-text");
    if (text !== BROKEN) fail(`the form lost its text: ${JSON.stringify(text)}`);
    const date = await page.inputValue("#compose-date");
    if (date !== "2026-12-03") fail(`the form lost its date: ${date}`);
  });

  await step("fixed, the check says it is ready, and saving drafts it for review", async () => {
    await page.fill("#p1-text", FIXED);
    await sees(page, "Ready: save it, and it goes to review", "#compose-check");
    await sees(page, "No problem found.", "#compose-check");
    await page.click("button:has-text('Save draft')");
    await page.waitForURL(/\/posts\/\d+$/);
    postId = page.url().split("/").pop();
    await sees(page, `Drafted post #${postId} on inn, scheduled for 2026-12-03 07:30 EST`);
    await sees(page, FIXED);
  });

  await step("the calendar's week shows the draft on its day, in the channel's zone", async () => {
    await page.click("nav >> text=Calendar");
    await page.waitForURL(`${base}/calendar`);
    await page.selectOption("select[name=channel]", "inn");
    await page.click("button:has-text('Show')");
    await sees(page, "America/New_York");
    const entry = page.locator(`#day-2026-12-03 #entry-${postId}`);
    await entry.waitFor({ state: "visible", timeout: 5000 });
    const time = (await entry.locator(".cal-time").innerText()).trim();
    if (time !== "07:30 EST") fail(`expected the draft at 07:30 EST, got ${time}`);
    await shot(page, "calendar-week-desktop");
  });

  await step("the operator moves it from the calendar", async () => {
    const entry = page.locator(`#entry-${postId}`);
    await entry.locator("summary:has-text('Move')").click();
    await entry.locator("input[name=date]").fill("2026-12-04");
    await entry.locator("input[name=time]").fill("10:15");
    await entry.locator(`button:has-text('Move #${postId}')`).click();
    await sees(page, `Moved post #${postId} to 2026-12-04 10:15 EST`);
    await page.locator(`#day-2026-12-04 #entry-${postId}`).waitFor({ state: "visible", timeout: 5000 });
    if ((await page.locator(`#day-2026-12-03 #entry-${postId}`).count()) !== 0) fail("the draft is still on the 3rd");
  });

  await step("the month shows it too", async () => {
    // It is still 30 November in New York: the month view opens on November, whose last
    // week shows the first days of December; the next month is a click away.
    await page.click("a.btn:has-text('Month')");
    await sees(page, "November 2026");
    await page.locator(`#day-2026-12-04.is-outside #entry-${postId}`).waitFor({ state: "visible", timeout: 5000 });
    await page.click("a.btn:has-text('Next')");
    await sees(page, "December 2026");
    await page.locator(`#day-2026-12-04 #entry-${postId}`).waitFor({ state: "visible", timeout: 5000 });
    await shot(page, "calendar-month-desktop");
  });

  await step("the pages read on a phone", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/compose?channel=inn`);
    await page.fill("#p1-text", BROKEN);
    await sees(page, 'the text lacks the required phrase "#inn"', "#compose-check");
    // On a phone the check follows the form.
    await page.locator("#compose-check").scrollIntoViewIfNeeded();
    await shot(page, "compose-phone");
    await page.goto(`${base}/calendar?view=week&start=2026-12-01&channel=inn`);
    await page.locator(`#entry-${postId}`).scrollIntoViewIfNeeded();
    await shot(page, "calendar-week-phone");
    await page.goto(`${base}/calendar?view=month&start=2026-12-01`);
    await sees(page, "December 2026");
    await shot(page, "calendar-month-phone");
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > 390) fail(`the month view scrolls sideways on a phone (${wide}px wide)`);
  });

  if (problems.length) fail(`the browser reported problems:\n${problems.join("\n")}`);
  console.log(`compose steps passed: post ${postId}`);
} catch (err) {
  failed = true;
  console.error(`FAILED: ${err.message}`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
