// `agentctx inspect`'s page in a real headless Chromium, on a file context
// and on a PostgreSQL context: what it shows (latest views, an instance's
// view, a past point), that it follows an append by another process, that
// it raises no script error and asks nothing of any other origin, and the
// server's Host check. Run by `cargo xtask browser` (and `cargo xtask ci`),
// which sets AGENTCTX_BIN, AGENTCTX_TEST_DATABASE_URL and
// AGENTCTX_SCREENSHOT. Selectors follow the page's DOM contract only
// (docs/inspect.md, "Tests in a real browser"); every wait is on
// `body[data-at][data-length]`, never a sleep.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launch } from "./chromium.mjs";
import { agentctx, append, directories, rendered, Server } from "./support.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DATABASE = process.env.AGENTCTX_TEST_DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";
const SCREENSHOT =
  process.env.AGENTCTX_SCREENSHOT ?? path.join(HERE, "..", "..", "target", "inspect.png");
// Unique to this run: contexts of other runs are never touched.
const RUN = `browser-${process.pid}-${Date.now()}`;
/** How long an append by another process may take to appear. */
const LIVE_MS = 5_000;

/**
 * What every context starts with, numbered from 0 as /api/log numbers
 * them: two global writes (the second overwrites `step`), an instance's
 * write (overwrites `name` in its layer), another kind, a text message.
 */
const START = [
  { type: "state", data: { name: "Ada", step: 1001 } },
  { type: "state", data: { step: 1002, mood: "curious" } },
  { type: "state", data: { name: "Bea", v: 4141 }, _instance: "i1" },
  { type: "input", data: { topic: "folds" } },
  { type: "text", text: "done" },
];

/** The two kinds of context, each made fresh for this run. */
const STORES = [
  {
    name: "file",
    async create() {
      this.dir = await mkdtemp(path.join(os.tmpdir(), "agentctx-browser-"));
      directories.add(this.dir);
      return path.join(this.dir, `${RUN}.jsonl`);
    },
    async remove() {
      if (this.dir) await rm(this.dir, { recursive: true, force: true });
      directories.delete(this.dir);
    },
  },
  {
    name: "PostgreSQL",
    async create() {
      const sep = DATABASE.includes("?") ? "&" : "?";
      const url = `${DATABASE}${sep}context=${RUN}`;
      const probe = await agentctx(["check", url]);
      assert.ok(
        probe.stderr.endsWith("no such context\n"),
        `${probe.stderr}\nthese tests need PostgreSQL: run \`cargo xtask browser\` (it finds or ` +
          `starts one), or set AGENTCTX_TEST_DATABASE_URL to a server's URL`,
      );
      return url;
    },
    // agentctx has no command that deletes a context; the test database
    // keeps it, as it keeps the Rust tests' contexts.
    async remove() {},
  },
];

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/**
 * Opens `pathname` of `server` in a new page, runs `body(page, seen)`, and
 * closes the page even when it fails. The page records every script error
 * (uncaught, or logged with console.error) and every request, and aborts
 * any request to another origin; the test fails on either, but for the
 * errors `expected` matches (a refusal the test asks for, which the
 * browser logs).
 */
async function visit(server, pathname, body, expected = []) {
  const page = await browser.newPage();
  const seen = { errors: [], requests: [], foreign: [] };
  try {
    await page.setViewport({ width: 1280, height: 900 });
    page.on("pageerror", (error) => seen.errors.push(`uncaught: ${error.message ?? error}`));
    page.on("console", (message) => {
      if (message.type() === "error") {
        seen.errors.push(`console.error: ${message.text()} (${message.location()?.url ?? "?"})`);
      }
    });
    await page.setRequestInterception(true);
    page.on("request", (request) => {
      const url = request.url();
      seen.requests.push(url);
      if (originOf(url) === server.origin) {
        request.continue();
      } else {
        seen.foreign.push(url);
        request.abort();
      }
    });
    await page.goto(new URL(pathname, server.url).href);
    await body(page, seen);
  } finally {
    await page.close();
  }
  const unexpected = seen.errors.filter((error) => !expected.some((pattern) => pattern.test(error)));
  assert.deepEqual(unexpected, [], `script errors on ${pathname}`);
  assert.deepEqual(seen.foreign, [], `requests to another origin from ${pathname}`);
}

function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return "(no origin)";
  }
}

/** The textContent of the first match of `selector`, or null when none. */
function text(page, selector) {
  return page.evaluate((s) => document.querySelector(s)?.textContent ?? null, selector);
}

/**
 * The view of `kind` shown: global, or as read in `instance` — opened
 * first, as a user opens it, since an instance's view is asked for only
 * then (D107: the inspector at scale).
 */
async function view(page, kind, instance) {
  if (instance !== undefined) {
    const box = `#views section[data-kind="${kind}"] [data-scope="instance"][data-instance="${instance}"]`;
    const open = await page.$eval(box, (details) => details.open).catch(() => null);
    if (open === false) await page.click(`${box} > summary`);
    if (open !== null) await page.waitForSelector(`${box}[data-loaded="yes"]`);
  }
  return page.evaluate(
    (kind, instance) => {
      const scope =
        instance === undefined
          ? '[data-scope="global"]'
          : `[data-scope="instance"][data-instance="${CSS.escape(instance)}"]`;
      const selector = `#views section[data-kind="${CSS.escape(kind)}"] ${scope}`;
      return document.querySelector(selector)?.textContent ?? null;
    },
    kind,
    instance,
  );
}

/** The `data-number` of every row of the log shown, in order. */
function rows(page) {
  return page.$$eval("#log tr[data-number]", (trs) => trs.map((tr) => tr.dataset.number));
}

function includesAll(shown, texts, what) {
  assert.notEqual(shown, null, `${what} is not on the page`);
  for (const t of texts) assert.ok(shown.includes(t), `${what} lacks ${t}: ${shown}`);
}

function includesNone(shown, texts, what) {
  for (const t of texts) assert.ok(!shown?.includes(t), `${what} shows ${t}: ${shown}`);
}

describe("inspect's plan", () => {
  const search = { _tool: "search", q: "†state.topic", _outputPath: "†state.found" };
  const summarise = { _tool: "summarise", text: "†state.found", _outputPath: "†state.summary" };
  const publish = { _tool: "publish", text: "†state.summary", _outputPath: "†state.published" };
  let dir;
  let server;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "agentctx-browser-plan-"));
    directories.add(dir);
    const context = path.join(dir, "plan.jsonl");
    await append(context, [
      { type: "state", data: { topic: "cats" } },
      { type: "plan", calls: [search, summarise, publish] },
      {
        type: "state", data: { found: ["a"] }, _outputPath: "†state.found", _call: search,
        _started: "2026-11-29T10:00:00Z", _date: "2026-11-29T10:00:01.500Z", _worker: "w-1", _attempt: 2,
      },
    ]);
    server = await Server.start(context);
  });
  after(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("draws the calls as a graph, each call that ran linked to its result with how long it took", async () => {
    await visit(server, "/", async (page) => {
      await rendered(page, 3, 3);
      const calls = await page.$$eval("svg.plan-graph g.call", (boxes) =>
        boxes.map((g) => `${g.dataset.call} ${g.getAttribute("class")} ${g.textContent}`));
      assert.deepEqual(calls, [
        "0 call done #0 searchdone · 1.5 scall 0: search, done, took 1.5 s; result #2",
        "1 call ready #1 summarisereadycall 1: summarise, ready",
        "2 call blocked #2 publishblockedcall 2: publish, blocked (waits for call 1)",
      ]);
      assert.equal(await page.$$eval("svg.plan-graph line.edge", (lines) => lines.length), 2);
      assert.equal(await text(page, '#plan tr[data-call="0"] td.result'), "#2");
      assert.equal(await text(page, '#plan tr[data-call="0"] td.took'), "1.5 s");
      assert.equal(await text(page, '#plan tr[data-call="1"] td.took'), "—");
      // Where `found` came from: message 2, the search call's answer, and
      // the inputs that call was given.
      await view(page, "state");
      await page.click('#views section[data-kind="state"] [data-scope="global"] .value[data-path=\'["found",0]\']');
      await page.waitForSelector('#provenance li[data-number="2"] button.more');
      const made = await text(page, '#provenance li[data-number="2"]');
      assert.equal(made, '#2 set †state.found · by search("q":"†state.topic") · 2026-11-29T10:00:01.500Z · took 1.5 s · worker w-1, attempt 2inputs');
      await page.click('#provenance li[data-number="2"] button.more');
      await page.waitForSelector('#provenance li[data-number="2"] .inputs');
      assert.equal(await text(page, '#provenance li[data-number="2"] .inputs'), ' inputs: {"q":"cats"}');
      await page.click('svg.plan-graph g.call[data-call="0"]');
      await page.waitForSelector('#log tr.picked[data-number="2"]');
    });
  });
});

describe("the demo's context, as the README shows it", () => {
  let dir;
  let server;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "agentctx-browser-demo-"));
    directories.add(dir);
    const context = path.join(dir, "agentctx-demo.jsonl");
    const run = await agentctx(["demo", "--context", context]);
    assert.equal(run.code, 0, run.stderr);
    server = await Server.start(context);
  });
  after(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("shows the demo's plan done and its instances' views, and leaves the screenshot", async () => {
    await visit(server, "/", async (page) => {
      await page.setViewport({ width: 1280, height: 1500 });
      const { length } = await server.json("/api/log?limit=1");
      await rendered(page, length, length);
      // Every call is done, the demo's last call (notify) too: it writes
      // nothing, and its `ran` record says that it ran, and how long it took.
      const plan = (await server.json("/api/plan")).plan.calls;
      const states = await page.$$eval("svg.plan-graph g.call", (boxes) =>
        boxes.map((g) => g.getAttribute("class").replace("call ", "")));
      assert.deepEqual(states, plan.map(() => "done"));
      const notify = plan.filter((c) => c.call._outputPath === undefined);
      assert.ok(notify.length > 0 && notify.every((c) => Number.isInteger(c.ms)), JSON.stringify(notify));
      assert.ok(plan.every((c) => Number.isInteger(c.ms)), JSON.stringify(plan));
      const { instances } = await server.json("/api/instances");
      for (const { id, kinds } of instances.slice(0, 2)) {
        const shown = await view(page, kinds[0], id);
        assert.ok(shown.length > 0, `instance ${id}'s view`);
      }
      const { messages } = await server.json(`/api/log?before=${length}&limit=1`);
      await page.click(`#log tr[data-number="${messages[0].number}"] td.message`);
      await page.waitForSelector(`#log tr[data-detail="${messages[0].number}"] .digest`);
      await mkdir(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT });
    });
  });
});

for (const store of STORES) {
  describe(`inspect on a ${store.name} context`, () => {
    let context;
    let server;
    before(async () => {
      context = await store.create();
      await append(context, START);
      server = await Server.start(context);
    });
    after(async () => {
      await server?.stop();
      await store.remove();
    });

    it("shows the latest view of every kind, the log and the context's name", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        const state = await view(page, "state");
        includesAll(state, ['"Ada"', "1002", '"curious"'], "the global state");
        // Overwritten by message 1, and written in instance i1 only.
        includesNone(state, ["1001", "4141", '"Bea"'], "the global state");
        includesAll(await view(page, "input"), ['"folds"'], "the global input");
        assert.deepEqual(await rows(page), await server.numbers());
        const log = await server.json("/api/log?limit=1");
        assert.equal((await text(page, "#context"))?.trim(), log.context);
        assert.equal((await text(page, "#status"))?.trim(), "");
      });
    });

    it("shows an instance's view as its layer over the global one", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        const i1 = await view(page, "state", "i1");
        // Its own writes, and the global step it did not overwrite.
        includesAll(i1, ["4141", '"Bea"', "1002"], "instance i1's state");
        includesNone(i1, ['"Ada"'], "instance i1's state");
      });
    });

    it("at=1 shows only what the first message wrote, and the point 1", async () => {
      await visit(server, "/?at=1", async (page) => {
        await rendered(page, 1, START.length);
        includesAll(await view(page, "state"), ['"Ada"', "1001"], "the global state at 1");
        const views = await text(page, "#views");
        includesNone(views, ["1002", '"curious"', "4141", '"folds"'], "the views at 1");
        assert.deepEqual(await rows(page), await server.numbers(1));
      });
    });

    // `visit` fails on any script error; these are points none of the
    // tests above opens.
    it("raises no script error, at the empty point, the first or the latest", async () => {
      for (const at of [0, 1, START.length]) {
        await visit(server, `/?at=${at}`, (page) => rendered(page, at, START.length));
      }
    });

    it("says so when ?at= is not a point, in the server's words", async () => {
      await visit(server, "/?at=abc", async (page) => {
        await page.waitForFunction(() => document.body?.dataset.error !== undefined, { timeout: 20_000 });
        const status = await text(page, "#status");
        assert.equal(
          status,
          `error: at: not a point: a point is a whole number of messages, 0 to ${START.length} ` +
            "(the context's length)",
        );
        // Nothing is shown as if it were a point.
        assert.equal(await page.evaluate(() => document.body.dataset.at), undefined);
      }, [/status of 400 \(Bad Request\) \(http:\/\/127\.0\.0\.1:\d+\/api\/views\?at=abc\)$/]);
    });

    it("shows an opened message indented, with the chain's digest after it", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        await page.click('#log tr[data-number="0"] td.message');
        await page.waitForSelector('#log tr[data-detail="0"] .digest');
        const opened = await text(page, '#log tr[data-detail="0"] pre');
        const digest = await server.json("/api/digest?n=0");
        assert.ok(opened.startsWith('{\n  "type": "data",'), opened);
        assert.equal(await text(page, '#log tr[data-detail="0"] .digest'), `chain digest after #0: ${digest.digest}`);
        assert.match(digest.digest, /^[0-9a-f]{64}$/);
        // A second click closes it.
        await page.click('#log tr[data-number="0"] td.message');
        assert.equal(await page.$('#log tr[data-detail="0"]'), null);
      });
    });

    it("names what changed as references, each linked to the messages that made it", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        await page.evaluate(() => {
          document.getElementById("diff-from").value = "1";
        });
        await page.click("#diff-go");
        await page.waitForSelector("#diff li");
        const lines = await page.$$eval("#diff li", (items) => items.map((li) => li.textContent));
        for (const line of [
          "~ †state.step: 1001 → 1002",
          '+ †state.mood: "curious"',
          // Instance i1 did not exist after message 1: it read the global
          // view then, so only what differs from that is a change.
          '~ †state.name (instance i1): "Ada" → "Bea"',
          "+ †state.v (instance i1): 4141",
          // A kind that did not exist: its whole view added.
          '+ †input: {"topic":"folds"}',
        ]) {
          assert.ok(lines.includes(line), `${line} not among ${JSON.stringify(lines)}`);
        }
        // What i1 reads of the global view's changes is shown once, as the
        // global change.
        assert.equal(lines.length, 5, JSON.stringify(lines));
        const step = await page.$$("#diff li");
        await step[lines.indexOf("~ †state.step: 1001 → 1002")].click();
        await page.waitForSelector('#provenance li[data-number="1"]');
        const said = await text(page, "#provenance");
        assert.ok(said.startsWith("†state.step was made by message(s): "), said);
        assert.equal(await text(page, '#provenance li[data-number="1"]'), "#1 merge");
      });
    });

    it("counts the prompt's tokens when asked, as the API does", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        const counted = await server.json("/api/prompt?tokens=1");
        assert.equal(await text(page, "#tokens"), `${counted.count} message(s) count tokens`);
        await page.click("#tokens button");
        await page.waitForFunction(() => /tokens \(/.test(document.getElementById("tokens").textContent));
        assert.equal(
          await text(page, "#tokens"),
          `${counted.tokens} tokens (o200k_base) in ${counted.count} message(s)`,
        );
      });
    });

    it("asks nothing of any origin but the one it is served from", async () => {
      await visit(server, "/", async (page, seen) => {
        await rendered(page, START.length, START.length);
        assert.deepEqual(seen.foreign, []);
        // The recording saw the page itself: interception was on.
        assert.ok(seen.requests.includes(server.url), `requests recorded: ${seen.requests}`);
      });
    });

    it("answers 403 to a foreign Host and 200 to localhost", async () => {
      const foreign = await server.get("/", `evil.example:${server.port}`);
      assert.equal(foreign.status, 403, foreign.body);
      const local = await server.get("/", `localhost:${server.port}`);
      assert.equal(local.status, 200, local.body);
    });

    // Last: it grows the context the tests above read.
    it("shows an append by another process within 5 s, without reloading", async () => {
      await visit(server, "/", async (page) => {
        await rendered(page, START.length, START.length);
        // Gone if the page reloads.
        await page.evaluate(() => (window.stillTheSamePage = true));
        const started = performance.now();
        await append(context, [{ type: "state", data: { live: "from-another-process" } }]);
        const left = LIVE_MS - (performance.now() - started);
        await rendered(page, START.length + 1, START.length + 1, Math.max(left, 1));
        includesAll(await view(page, "state"), ['"from-another-process"'], "the global state");
        assert.deepEqual(await rows(page), await server.numbers());
        const same = await page.evaluate(() => window.stillTheSamePage);
        assert.equal(same, true, "the page reloaded");
      });
    });
  });
}
