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
const seen = {};

// The agent's MCP client: tasks are submitted while the page is already open.
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${agentToken}` } },
});
const mcp = new Client({ name: "handoff-dashboard-test", version: "1.0.0" });
await mcp.connect(transport);
async function submit(description) {
  const result = await mcp.callTool({
    name: "execute_task",
    arguments: { task_description: description },
  });
  const id = result.structuredContent?.task_id;
  if (!id) throw new Error(`execute_task failed: ${JSON.stringify(result)}`);
  return id;
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

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

  // The task page: the agent's answer and the coloured diff, then its files.
  await Promise.all([page.waitForURL(`${base}/tasks/${created}`), page.click(`tr[data-task-id="${created}"] a`)]);
  seen.answer = (await page.textContent("#answer"))?.trim() ?? null;
  seen.diffAdded = await page.$$eval("pre.diff .d-add", (lines) => lines.map((l) => l.textContent.trim()));
  seen.diffHunks = await page.$$eval("pre.diff .d-hunk", (lines) => lines.length);
  seen.diffAddColour = await page.$eval("pre.diff .d-add", (l) => getComputedStyle(l).color);
  await shot("03-task-diff");
  await Promise.all([page.waitForURL(/\/files/), page.click("#files-link")]);
  seen.files = await page.$$eval("#files li a", (links) => links.map((a) => a.textContent.trim()));
  await Promise.all([page.waitForURL(/\/file\?/), page.click("#files li a >> text=hello.txt")]);
  seen.fileContent = (await page.textContent("#file-content")).trim();
  await shot("04-file-view");

  // Approve: a task opened while it runs shows its permission request live; the click lets
  // it continue.
  const asking = await submit("ASK-TOUCH allow");
  await page.goto(`${base}/tasks/${asking}`);
  await page.waitForSelector("body[data-live-state=on]", { timeout: 20_000 });
  const eventsAtOpen = await page.$$eval("#events li", (items) => items.length);
  await page.evaluate(() => { window.__handoffNoReload = "still here"; });
  await page.waitForSelector("#pending form.request button.approve", { timeout: LONG });
  seen.approveAppearedLive = await page.evaluate(() => window.__handoffNoReload ?? null);
  seen.eventsGrewLive = (await page.$$eval("#events li", (items) => items.length)) > eventsAtOpen;
  seen.pendingTitle = (await page.textContent("#pending form.request .title")).trim();
  await shot("05-permission-request");
  await Promise.all([page.waitForURL(`${base}/tasks/${asking}`), page.click("#pending button.approve")]);
  await page.waitForSelector("#task-state[data-status=completed]", { timeout: LONG });
  seen.approvedState = "completed";
  await shot("06-approved-and-completed");

  // Cancel: a running task stops when the button is clicked.
  const hanging = await submit("HANG forever");
  await page.goto(`${base}/tasks/${hanging}`);
  await page.waitForSelector("#task-state[data-status=running]", { timeout: LONG });
  await shot("07-running");
  // A message typed on the page reaches the task's history (shown live).
  await page.fill("#message", "a note from the dashboard");
  await Promise.all([page.waitForURL(`${base}/tasks/${hanging}`), page.click("#message-form button[type=submit]")]);
  await page.waitForSelector("#events li.k-message", { timeout: 30_000 });
  seen.messageEvent = (await page.textContent("#events li.k-message .msg")).trim();
  await Promise.all([page.waitForURL(`${base}/tasks/${hanging}`), page.click("#controls button[value=cancel]")]);
  await page.waitForSelector("#task-state[data-status=cancelled]", { timeout: 60_000 });
  seen.cancelledState = "cancelled";
  await shot("08-cancelled");

  seen.tasks = { created, asking, hanging };
  console.log(JSON.stringify(seen));
} catch (error) {
  console.error(`dashboard check failed: ${error?.stack ?? error}\nseen so far: ${JSON.stringify(seen)}`);
  process.exitCode = 1;
} finally {
  await browser.close();
  await mcp.close();
}
