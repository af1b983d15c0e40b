// Drives the system's headless Chromium (CHROMIUM, default /usr/bin/chromium; never a downloaded
// browser) with playwright-core for tests/browser/test_viewer.py.
//
//   node driver.mjs [ARG...]  reads one JSON job per line on stdin: {"url", "id"?, "screenshot"?, "timeout"?, "argsProbe"?, "probe"?, "steps"?, "clock"?}
//                             and writes one JSON result per line on stdout, with one browser for all jobs;
//                             ARGs are added to Chromium's command line (--js-flags=--stack-size=100: a smaller JS
//                             stack, so a call takes fewer arguments).
//
// A result: {state, messages (the page's <pre id="messages-json"> parsed, once its "show all" is clicked when it shows
// the ends of the text only), jsonShown and jsonNote (how many characters it showed before, and its note), jsonEnds
// ("the whole's" when the ends it showed are those of the whole; null when it showed the whole), status,
// events, reconnects, restarts,
// eventRequests: [{lastEventId}], console: [...], pageErrors: [...], cspViolations: [...], dialogs: [...], cspHeader}; with
// "argsProbe": N, argsProbe: what replaceChildren with N nodes as its arguments does in the page ("fits", or the error it
// throws); with "probe": an expression (JavaScript text), probe: its value in the page once the stream has ended; with
// "steps": [{events?, reconnects?, run?, probe?, next?, after?}] (counts, milliseconds, an expression, a URL), steps: each
// probe's value while the page streams (below). With "clock": "paused" the page's timers (setTimeout, Date,
// performance...) are Playwright's and stand still (the job's own browser: a clock is its whole context's): none fires
// unless a step's "run" or "after" moves the clock on, so what the page does between them is fixed by the test.
import readline from "node:readline";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentmsg-chromium-"));
// Without the background-networking flags Chromium's own connections are refused on a closed network.
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", ...process.argv.slice(2)];
const context = await chromium.launchPersistentContext(userDataDir, { executablePath, args, headless: true, viewport: { width: 1100, height: 900 } });

async function run(job) {
  const page = await context.newPage();
  const out = { console: [], pageErrors: [], cspViolations: [], eventRequests: [], dialogs: [], cspHeader: null };
  page.on("console", (m) => {
    const text = m.text();
    if (/Content.Security.Policy|Refused to/i.test(text)) out.cspViolations.push(text);
    if (m.type() === "error" || m.type() === "warning") out.console.push(`${m.type()}: ${text}`);
  });
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  page.on("dialog", (d) => {
    out.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.endsWith("/events")) out.eventRequests.push({ lastEventId: r.headers()["last-event-id"] ?? null });
  });
  try {
    if (job.clock === "paused") {
      await page.clock.install();
      await page.clock.pauseAt(Date.now() + 1000);
    }
    const response = await page.goto(job.url, { waitUntil: "domcontentloaded", timeout: job.timeout ?? 30000 });
    out.cspHeader = response?.headers()["content-security-policy"] ?? null;
    if (job.steps) {
      // while the page streams: wait until its connection has dropped "reconnects" times in all (when given: it has
      // read what the connections before sent), move its paused clock on by "run" ms (firing the timers due), wait
      // until it has rendered the step's "events" (when given), read its probe, fetch its "next" (a URL, from the
      // page: the test's server sends the next part of the stream when asked), then move the clock on by "after" ms
      const waitFor = (key, value) =>
        page.waitForFunction(([k, n]) => document.body.dataset[k] === n, [key, String(value)], { timeout: job.timeout ?? 30000 });
      out.steps = [];
      for (const step of job.steps) {
        if (step.reconnects !== undefined) await waitFor("reconnects", step.reconnects);
        if (step.run) await page.clock.runFor(step.run);
        if (step.events !== undefined) await waitFor("events", step.events);
        out.steps.push(step.probe ? await page.evaluate(step.probe) : null);
        if (step.next) await page.evaluate((u) => fetch(u).then((r) => r.status), step.next);
        if (step.after) await page.clock.runFor(step.after);
      }
    }
    await page.waitForFunction(() => ["done", "error"].includes(document.body.dataset.state), null, { timeout: job.timeout ?? 30000 });
    Object.assign(out, await page.evaluate(() => {
      // the JSON box shows the ends of a long text: what it shows, then the whole (its button)
      const box = document.getElementById("messages-json");
      const [jsonShown, jsonNote] = [box.textContent.length, box.querySelector(".cut")?.textContent ?? null];
      const ends = jsonNote === null ? null : [box.firstChild.textContent, box.lastChild.textContent];
      box.querySelector(".cut button")?.click();
      const whole = box.textContent;
      return {
        state: document.body.dataset.state,
        status: document.getElementById("status").textContent,
        events: Number(document.body.dataset.events),
        reconnects: Number(document.body.dataset.reconnects),
        restarts: Number(document.body.dataset.restarts),
        json: whole,
        jsonShown,
        jsonNote,
        jsonEnds: ends && whole.startsWith(ends[0]) && whole.endsWith(ends[1]) ? "the whole's" : ends && "not the whole's",
        cards: document.querySelectorAll("article.card").length,
      };
    }));
    out.messages = out.state === "done" ? JSON.parse(out.json) : null;
    delete out.json;
    if (job.argsProbe) {
      out.argsProbe = await page.evaluate((n) => {
        const nodes = Array.from({ length: n }, () => document.createElement("b"));
        try {
          document.createDocumentFragment().replaceChildren(...nodes);
          return "fits";
        } catch (e) {
          return `${e.name}: ${e.message}`;
        }
      }, job.argsProbe);
    }
    if (job.probe) out.probe = await page.evaluate(job.probe);
    if (job.screenshot) {
      await page.evaluate(() => document.querySelectorAll("details.thinking").forEach((d) => (d.open = false)));
      await page.screenshot({ path: job.screenshot, fullPage: true });
    }
  } catch (e) {
    out.state = "driver-error";
    out.error = String(e);
  } finally {
    await page.close();
  }
  return out;
}

// Jobs run as they come, at most PARALLEL at once (AGENTMSG_BROWSER_PARALLEL, default 6), each result written when
// its page is done, with the job's "id" when it has one: a caller that sends one job and waits for its line gets
// them one at a time; one that sends many at once (ids given) has their waits (reconnects, timers) overlap.
const PARALLEL = Math.max(1, Number(process.env.AGENTMSG_BROWSER_PARALLEL) || 6);
let running = 0;
const queue = [];
const slot = () => (running < PARALLEL ? (running++, Promise.resolve()) : new Promise((go) => queue.push(go)));
const free = () => {
  const next = queue.shift();
  if (next) next();
  else running--;
};
const jobs = [];
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const job = JSON.parse(line);
  await slot();
  jobs.push(
    run(job)
      .then((out) => process.stdout.write(JSON.stringify(job.id === undefined ? out : { ...out, id: job.id }) + "\n"))
      .finally(free),
  );
}
await Promise.all(jobs);
await context.close();
fs.rmSync(userDataDir, { recursive: true, force: true });
