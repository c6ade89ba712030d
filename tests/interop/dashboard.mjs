// Drives Handoff's web dashboard in headless Chromium (Debian's /usr/bin/chromium) with
// playwright-core, while an agent submits tasks over MCP with the official TypeScript SDK.
// usage: node dashboard.mjs URL OPERATOR_TOKEN AGENT_TOKEN SCREENSHOT_DIR
// Prints one JSON object with what it saw; exits non-zero (with the reason) on any failure.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, operatorToken, agentToken, shots] = process.argv.slice(2);
if (!shots) {
  throw new Error("usage: node dashboard.mjs URL OPERATOR_TOKEN AGENT_TOKEN SCREENSHOT_DIR");
}
mkdirSync(shots, { recursive: true });
const CHROMIUM = "/usr/bin/chromium";
const LONG = 150_000;
const BULK = 200;
const seen = {};

// The agent's MCP client: tasks are submitted while the page is already open.
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${agentToken}` } },
});
const mcp = new Client({ name: "handoff-dashboard-test", version: "1.0.0" });
await mcp.connect(transport);
async function tool(name, args) {
  const result = await mcp.callTool({ name, arguments: args });
  if (result.isError || !result.structuredContent) {
    throw new Error(`${name} failed: ${JSON.stringify(result)}`);
  }
  return result.structuredContent;
}
async function submit(description, extra = {}) {
  const out = await tool("execute_task", { task_description: description, ...extra });
  if (!out.task_id) throw new Error(`execute_task returned no task: ${JSON.stringify(out)}`);
  return out.task_id;
}
const texts = (page, selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what, check, limit = LONG) {
  const end = Date.now() + limit;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(300);
  }
}
const FINISHED = ["completed", "failed", "timeout", "cancelled"];
// Follows the link `selector` names and waits for its very page (a wait for a pattern the
// current URL already matches would not wait).
async function go(page, selector) {
  const target = new URL(await page.getAttribute(selector, "href"), base);
  target.hash = "";
  const arrived = (url) => {
    const at = new URL(url);
    at.hash = "";
    return at.toString() === target.toString();
  };
  await Promise.all([page.waitForURL(arrived), page.click(selector)]);
}
async function ended(id) {
  return until(`task ${id} to end`, async () => {
    const status = await tool("get_task_status", { task_id: id });
    return FINISHED.includes(status.status) ? status : null;
  });
}

// The browser's Notification, recorded: asked for only on "Notify me", granted when asked.
function fakeNotifications() {
  window.__notes = [];
  let permission = window.sessionStorage.getItem("__permission") || "default";
  window.Notification = class {
    constructor(title, options) {
      window.__notes.push({ title, tag: options && options.tag });
    }
    static get permission() {
      return permission;
    }
    static requestPermission() {
      permission = "granted";
      window.sessionStorage.setItem("__permission", permission);
      return Promise.resolve(permission);
    }
  };
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(fakeNotifications);
  // `whole: false`: the viewport only (a part of a big diff is thousands of lines long).
  const shot = (name, whole = true) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: whole });

  // An agent token cannot open the dashboard; an operator token can.
  await page.goto(`${base}/`);
  if (!page.url().endsWith("/login")) throw new Error(`not sent to the login form: ${page.url()}`);
  await page.fill("#token", agentToken);
  const refused = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/login") && r.request().method() === "POST"),
    page.click("button[type=submit]"),
  ]).then(([response]) => response);
  seen.agentLoginStatus = refused.status();
  seen.agentLoginMessage = await page.textContent("#login-error");
  await shot("01-agent-token-refused");
  await page.fill("#token", operatorToken);
  await Promise.all([page.waitForURL(`${base}/`), page.click("button[type=submit]")]);
  seen.operatorLoggedIn = (await page.textContent("h1")).trim();

  // The list is live: a task submitted now appears and changes state without a reload.
  await page.waitForSelector("body[data-live-state=on]", { timeout: 20_000 });
  await page.evaluate(() => { window.__handoffNoReload = "still here"; });
  const created = await submit("CREATE-FILE please");
  await page.waitForSelector(`tr[data-task-id="${created}"]`, { timeout: 30_000 });
  seen.listFirstState = await page.getAttribute(`tr[data-task-id="${created}"]`, "data-status");
  await page.waitForSelector(`tr[data-task-id="${created}"][data-status=completed]`, { timeout: LONG });
  seen.listNoReload = await page.evaluate(() => window.__handoffNoReload ?? null);
  await shot("02-task-list-live");

  // The task page: the agent's answer and the diff (a section per file, numbered, coloured),
  // then its files.
  await Promise.all([page.waitForURL(`${base}/tasks/${created}`), page.click(`tr[data-task-id="${created}"] a`)]);
  seen.answer = (await page.textContent("#answer"))?.trim() ?? null;
  seen.diffFiles = await page.$$eval("details.diff-file[open]", (files) => files.map((f) => f.getAttribute("data-file")));
  seen.diffAdded = await texts(page, ".diff-file tr.d-add .txt");
  seen.diffAddedNumbers = await texts(page, ".diff-file tr.d-add td.new");
  seen.diffHunks = await page.$$eval(".diff-file tr.d-hunk", (lines) => lines.length);
  seen.diffAddColour = await page.$eval(".diff-file tr.d-add", (l) => getComputedStyle(l).color);
  seen.diffFileCounts = (await page.textContent(".diff-file summary .adds")).trim();
  await shot("03-task-diff");
  await Promise.all([page.waitForURL(/\/files/), page.click("#files-link")]);
  seen.files = await page.$$eval("#files li a", (links) => links.map((a) => a.textContent.trim()));
  await Promise.all([page.waitForURL(/\/file\?/), page.click("#files li a >> text=hello.txt")]);
  seen.fileContent = (await page.textContent("#file-content")).trim();
  await shot("04-file-view");

  const formTask = await newTaskFromTheForm(page, shot);
  await reviewTheDiff(page, shot, formTask);
  const asking = await approveWithNotice(page, shot);
  const hanging = await cancelAfterConfirming(page, shot);
  const big = await pageThroughABigDiff(page, shot);
  await pageThroughTheList(page, shot);

  seen.tasks = { created, asking, hanging, formTask, big };
  console.log(JSON.stringify(seen));
} catch (error) {
  console.error(`dashboard check failed: ${error?.stack ?? error}\nseen so far: ${JSON.stringify(seen)}`);
  process.exitCode = 1;
} finally {
  await browser.close();
  await mcp.close();
}

// The new-task form: the executors and directories the server offers; the tool's own error
// shown on the form as typed; then a task started from it, followed to its end.
async function newTaskFromTheForm(page, shot) {
  await page.goto(`${base}/`);
  await Promise.all([page.waitForURL(`${base}/new`), page.click("#new-task-link")]);
  seen.formExecutors = await page.$$eval("#executor option", (o) => o.map((x) => x.value).filter(Boolean));
  seen.formRoots = await page.$$eval("#workdir option", (o) => o.map((x) => x.value).filter(Boolean));
  await page.fill("#description", "FORM-TASK write notes");
  await page.selectOption("#executor", "opencode");
  await page.fill("#branch", "review/notes");
  await Promise.all([page.waitForResponse((r) => r.url().endsWith("/new") && r.request().method() === "POST"), page.click("#new-task button[type=submit]")]);
  await page.waitForSelector("#new-task-error");
  seen.formError = (await page.textContent("#new-task-error")).trim();
  seen.formKept = await page.inputValue("#description");
  seen.formKeptExecutor = await page.inputValue("#executor");
  await shot("09-new-task-refused");
  await page.fill("#branch", "");
  await Promise.all([page.waitForURL(/\/tasks\/task_/), page.click("#new-task button[type=submit]")]);
  const id = page.url().split("/tasks/")[1].split(/[?#]/)[0];
  await page.waitForSelector("#task-state[data-status=completed]", { timeout: LONG });
  seen.formTaskState = "completed";
  seen.formTaskExecutor = (await page.textContent("dl.facts dd:nth-of-type(2)")).trim();
  return id;
}

// Line comments: two lines of the diff commented inline, sent as one message; the finished
// task starts a follow-up round, shown live: running again, then completed a second time.
async function reviewTheDiff(page, shot, id) {
  await page.goto(`${base}/tasks/${id}`);
  await page.waitForSelector("body[data-live-state=on]", { timeout: 20_000 });
  const notes = 'details.diff-file[data-file="notes.txt"]';
  seen.reviewFormShown = await page.isVisible("#message-form");
  seen.reviewNoteShown = await page.isVisible("#message-note");
  for (const [line, comment] of [["1", "first line looks fine"], ["3", "say why gamma"]]) {
    await page.click(`${notes} button.cmt[data-new="${line}"]`);
    await page.fill("tr.cmt-box textarea", comment);
    await page.click("tr.cmt-box .cmt-add");
  }
  seen.reviewListed = await page.$$eval("#review-comments li", (items) => items.length);
  await shot("10-review-comments");
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/tasks/${id}/message`) && r.request().method() === "POST"),
    page.click("#review-send"),
  ]);
  await page.waitForURL(`${base}/tasks/${id}`);
  await page.waitForSelector("#events li.k-message", { timeout: 30_000 });
  seen.reviewMessage = (await page.textContent("#events li.k-message .msg")).trim();
  // The follow-up round, live on the page that sent it. Its end is recorded whatever it is,
  // with its error, so the walk goes on and the test says what happened.
  const states = [];
  await page.waitForSelector("#task-state[data-status=running]", { timeout: LONG });
  states.push("running");
  const end = FINISHED.map((s) => `#task-state[data-status=${s}]`).join(", ");
  await page.waitForSelector(end, { timeout: LONG });
  states.push(await page.getAttribute("#task-state", "data-status"));
  seen.followUp = states;
  seen.followUpError = (await page.$eval("#summary", (s) => s.querySelector(".problem")?.textContent ?? null));
  seen.followUpEvents = (await texts(page, "#events li")).slice(-12);
  await shot("11-follow-up-completed");
}

// Approve: a task opened while it runs shows its permission request live, says so in the
// title and notifies once (after "Notify me"); the click lets it continue.
async function approveWithNotice(page, shot) {
  const asking = await submit("ASK-TOUCH allow");
  await page.goto(`${base}/tasks/${asking}`);
  await page.waitForSelector("body[data-live-state=on]", { timeout: 20_000 });
  const eventsAtOpen = await page.$$eval("#events li", (items) => items.length);
  await page.evaluate(() => { window.__handoffNoReload = "still here"; });
  seen.notifyOffered = await page.isVisible("#notify-me");
  await page.click("#notify-me");
  await page.waitForSelector("#pending form.request button.approve", { timeout: LONG });
  seen.approveAppearedLive = await page.evaluate(() => window.__handoffNoReload ?? null);
  seen.eventsGrewLive = (await page.$$eval("#events li", (items) => items.length)) > eventsAtOpen;
  seen.pendingTitle = (await page.textContent("#pending form.request .title")).trim();
  await page.waitForFunction(() => window.__notes.length > 0, null, { timeout: 10_000 });
  seen.approvalTitle = await page.title();
  seen.notifications = await page.evaluate(() => window.__notes);
  await shot("05-permission-request");
  // Once per request: a reload shows the request again, and no second notification.
  await page.reload();
  await page.waitForSelector("#pending form.request button.approve", { timeout: LONG });
  await sleep(1500);
  seen.notificationsAfterReload = await page.evaluate(() => window.__notes.length);
  seen.approvalTitleAfterReload = await page.title();
  await Promise.all([page.waitForURL(`${base}/tasks/${asking}`), page.click("#pending button.approve")]);
  await page.waitForSelector("#task-state[data-status=completed]", { timeout: LONG });
  seen.approvedState = "completed";
  seen.titleAfterApproval = await page.title();
  await shot("06-approved-and-completed");
  return asking;
}

// Cancel: asked first (a dialog with the script, a page of its own without); a running task
// stops once it is confirmed.
async function cancelAfterConfirming(page, shot) {
  const hanging = await submit("HANG forever");
  await page.goto(`${base}/tasks/${hanging}`);
  await page.waitForSelector("#task-state[data-status=running]", { timeout: LONG });
  await shot("07-running");
  // A message typed on the page reaches the task's history (shown live).
  await page.fill("#message", "a note from the dashboard");
  await Promise.all([page.waitForURL(`${base}/tasks/${hanging}`), page.click("#message-form button[type=submit]")]);
  await page.waitForSelector("#events li.k-message", { timeout: 30_000 });
  seen.messageEvent = (await page.textContent("#events li.k-message .msg")).trim();
  // Dismissed: nothing happens.
  page.once("dialog", (dialog) => {
    seen.cancelDialog = dialog.message();
    dialog.dismiss();
  });
  await page.click("#controls button[value=cancel]");
  await sleep(1000);
  seen.cancelDismissedState = await page.getAttribute("#task-state", "data-status");
  // Without the script a browser gets the server's own confirm page.
  const plain = await page.request.post(`${base}/tasks/${hanging}/control`, {
    form: { control: "cancel" },
    headers: { Origin: base, Accept: "text/html" },
  });
  seen.confirmPageStatus = plain.status();
  seen.confirmPageAsks = (await plain.text()).includes('name="confirm" value="yes"');
  seen.stateAfterConfirmPage = (await tool("get_task_status", { task_id: hanging })).status;
  page.once("dialog", (dialog) => dialog.accept());
  await Promise.all([page.waitForURL(`${base}/tasks/${hanging}`), page.click("#controls button[value=cancel]")]);
  await page.waitForSelector("#task-state[data-status=cancelled]", { timeout: 60_000 });
  seen.cancelledState = "cancelled";
  await shot("08-cancelled");
  return hanging;
}

// A diff larger than one tool result: shown part by part, numbered on, never as a pointer to
// a spilled copy.
async function pageThroughABigDiff(page, shot) {
  const big = await submit("seq 1 30000 > big.txt", { executor: "command" });
  const status = await ended(big);
  seen.bigState = status.status;
  seen.bigError = status.error ?? null;
  await page.goto(`${base}/tasks/${big}`);
  const body = async () => page.textContent("body");
  seen.bigMentionsSpill = (await body()).includes("read_tool_output");
  const numbers = async () => (await texts(page, ".diff-file tr.d-add td.new")).map(Number);
  const first = await numbers();
  seen.bigFirstPart = [first[0], first[first.length - 1]];
  seen.bigRange = (await page.textContent("#diff-range")).trim();
  let parts = 1;
  await go(page, "#diff-next");
  parts += 1;
  const second = await numbers();
  seen.bigSecondPart = [second[0], second[second.length - 1]];
  seen.bigContinued = (await page.textContent(".diff-file summary")).includes("continued");
  seen.bigFirstLink = await page.isVisible("#diff-first");
  seen.bigMentionsSpill ||= (await body()).includes("read_tool_output");
  await page.locator("#diff-section").scrollIntoViewIfNeeded();
  await shot("12-big-diff-second-part", false);
  while (await page.$("#diff-next")) {
    await go(page, "#diff-next");
    parts += 1;
  }
  const last = await numbers();
  seen.bigLastNumber = last[last.length - 1];
  seen.bigParts = parts;
  return big;
}

// Two hundred tasks: paged with the cursor to the 150th, back to the newest, and filtered by
// text and by state.
async function pageThroughTheList(page, shot) {
  for (let n = 1; n <= BULK; n += 1) {
    await submit(`echo BULK-${String(n).padStart(3, "0")}`, { executor: "command", priority: -100 });
  }
  await until("the bulk tasks to end", async () => {
    for (const status of ["queued", "running"]) {
      const listed = await tool("list_tasks", { status, text: "BULK-", limit: 1 });
      if (listed.tasks.length) return null;
    }
    return true;
  }, 300_000);
  const rows = () => page.$$eval("#task-rows tr.task", (trs) => trs.map((tr) => ({
    text: tr.querySelector("td.desc").textContent.trim(),
    status: tr.getAttribute("data-status"),
  })));
  await page.goto(`${base}/`);
  await page.fill("#filter-text", "BULK-");
  await Promise.all([page.waitForURL(/q=BULK-/), page.click("#filters button[type=submit]")]);
  const first = await rows();
  seen.bulkFirstPage = [first.length, first[0]?.text, first[first.length - 1]?.text];
  await go(page, "#page-older");
  await go(page, "#page-older");
  const third = await rows();
  // Newest first: the 150th of 200 ends the third page of 50.
  seen.bulkThirdPage = [third.length, third[0]?.text, third[third.length - 1]?.text];
  seen.bulkThirdPageUrl = page.url().replace(base, "");
  await shot("13-third-page");
  await go(page, "#page-newest");
  seen.bulkBackToNewest = (await rows())[0]?.text;
  // One state: every row in it.
  const state = first[0].status;
  await page.selectOption("#filter-status", state);
  await Promise.all([page.waitForURL(new RegExp(`status=${state}`)), page.click("#filters button[type=submit]")]);
  const inState = await rows();
  seen.bulkStateFilter = { state, rows: inState.length, all: inState.every((r) => r.status === state) };
  await page.selectOption("#filter-status", "running");
  await Promise.all([page.waitForURL(/status=running/), page.click("#filters button[type=submit]")]);
  seen.bulkRunningRows = (await rows()).length;
  // The text in any case.
  await page.goto(`${base}/?q=bulk-123`);
  seen.bulkOne = (await rows()).map((r) => r.text);
  await shot("14-filtered");
}
