// `agentctx inspect` at a real size, in a real headless Chromium: a
// generated context of 100,000 messages over 1,000 instances. What is
// checked everywhere: the page shows each part lazily (instance views
// collapsed, a page of the log and of the prompt), so it stays a few
// screens tall; a jump to a point and an append by another process are
// shown. What is measured: how long after opening the page is usable, a
// jump is shown and an append is shown, and the server's memory beyond
// what it holds for a one-message context — written as bench rows to
// AGENTCTX_SCALE_REPORT, which `cargo xtask bench inspect` sets (with the
// release binary) and judges against their targets (1 s, 1 s, 1 s, 3 × the
// log); speed is judged by the bench, never by a test.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { launch } from "./chromium.mjs";
import { agentctx, directories, rendered, Server } from "./support.mjs";

/** Messages in the generated context, and the instances they write. */
const MESSAGES = 100_000;
const INSTANCES = 1_000;
/** Where the measurements go, as bench rows; unset, nothing is measured. */
const REPORT = process.env.AGENTCTX_SCALE_REPORT;
/** Rounds of each measurement when measuring (enough for a middle half
 * of short times to be judged), else one. */
const ROUNDS = REPORT ? 15 : 1;

/**
 * The context: a global write, then each instance's notes pushed one at a
 * time with now and then its step set, and a global write every 10,000
 * messages. Written as a user's program would write JSONL, one line each.
 */
function generated() {
  const lines = [JSON.stringify({ type: "state", data: { title: "a generated context", step: 0 } })];
  for (let n = 1; n < MESSAGES; n++) {
    const instance = `w${String(n % INSTANCES).padStart(3, "0")}`;
    let message;
    if (n % 10_000 === 0) {
      message = { type: "state", data: { step: n } };
    } else if (n % 4 === 0) {
      message = { type: "state", data: { step: n }, _instance: instance };
    } else {
      message = {
        type: "state",
        data: { notes: `step ${n}: read page ${n} and noted what it said about folds` },
        _outputPath: "†state.notes",
        _outputMethod: "push",
        _instance: instance,
      };
    }
    lines.push(JSON.stringify(message));
  }
  return `${lines.join("\n")}\n`;
}

/** The peak resident set of process `pid` so far, in bytes. */
function peakMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
}

/**
 * A bench row of `samples` (ms) against `unit` ms: a deadline, judged by
 * its slowest round (`every_round`: each jump, each append, each opening
 * must be within it).
 */
function row(workload, what, samples, unit) {
  const ratios = samples.map((ms) => ms / unit);
  const slowest = Math.max(...ratios);
  return {
    workload,
    ratio: slowest,
    ratios,
    every_round: true,
    rounds: ratios.length,
    ours_ns: slowest * unit * 1e6,
    baseline: what,
  };
}

/** Sets the point shown as a user does, typing it into the number box. */
function typePoint(page, at) {
  return page.evaluate((at) => {
    const input = document.getElementById("at");
    input.value = String(at);
    input.dispatchEvent(new Event("change"));
  }, at);
}

describe("inspect on a context of 100,000 messages over 1,000 instances", () => {
  let dir;
  let context;
  let server;
  let browser;
  let page;
  let logBytes;
  let length = MESSAGES;
  const measured = { usable: [], jump: [], live: [] };
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "agentctx-scale-"));
    directories.add(dir);
    context = path.join(dir, "scale.jsonl");
    writeFileSync(context, generated());
    logBytes = statSync(context).size;
    server = await Server.start(context);
    browser = await launch();
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
  });
  after(async () => {
    await page?.close();
    await browser?.close();
    await server?.stop();
  });

  it("shows every part lazily: a few screens tall, instance views collapsed", async () => {
    // Once before measuring: Chromium's own first start of a page.
    await page.goto(new URL("/?at=0", server.url).href);
    await rendered(page, 0, length);
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      await page.goto(server.url);
      await rendered(page, length, length);
      measured.usable.push(performance.now() - started);
    }
    const shown = await page.evaluate(() => ({
      height: document.documentElement.scrollHeight,
      instances: document.querySelectorAll('#views [data-scope="instance"]').length,
      loaded: document.querySelectorAll('#views [data-scope="instance"][data-loaded]').length,
      rows: document.querySelectorAll("#log tr[data-number]").length,
      turns: document.querySelectorAll("#prompt .turn").length,
      more: document.getElementById("views").textContent.includes("900 more of 1000 instances"),
    }));
    assert.ok(shown.height < 20_000, `the page is ${shown.height} px tall: something is shown whole`);
    // Six-digit numbers are shown whole in the log's first column.
    const cut = await page.$$eval("#log td.number", (cells) =>
      cells.filter((td) => td.scrollWidth > td.clientWidth).map((td) => td.textContent));
    assert.deepEqual(cut, [], "numbers cut in the log's first column");
    assert.deepEqual(
      { instances: shown.instances, loaded: shown.loaded, rows: shown.rows, turns: shown.turns, more: shown.more },
      { instances: 100, loaded: 0, rows: 100, turns: 20, more: true },
    );
  });

  it("loads an instance's view when it is opened", async () => {
    const id = "w007";
    await page.click(`#views [data-scope="instance"][data-instance="${id}"] summary`);
    await page.waitForSelector(`#views [data-instance="${id}"][data-loaded="yes"]`);
    const view = await page.$eval(`#views [data-instance="${id}"]`, (box) => box.textContent);
    // Its own notes, and the global title it reads through.
    assert.ok(view.includes("step 7: read page 7") && view.includes('"a generated context"'), view);
    assert.ok(!view.includes("step 8: read page 8"), `another instance's note in ${id}'s view: ${view}`);
  });

  it("shows a jump to a point", async () => {
    const points = [50_000, 1, 99_999, 25_000, 75_000, 12_345, 99_000];
    const rounds = Math.max(ROUNDS, 2);
    for (const at of Array.from({ length: rounds }, (_, i) => points[i % points.length] + Math.floor(i / points.length))) {
      const started = performance.now();
      await typePoint(page, at);
      await rendered(page, at, length);
      measured.jump.push(performance.now() - started);
    }
  });

  it("shows an append by another process", async () => {
    await page.goto(server.url);
    await rendered(page, length, length);
    for (let round = 0; round < ROUNDS; round++) {
      const run = await agentctx([
        "append", context, JSON.stringify([{ type: "state", data: { live: `appended ${round}` } }]),
      ]);
      assert.equal(run.code, 0, run.stderr);
      const started = performance.now();
      length += 1;
      await rendered(page, length, length);
      measured.live.push(performance.now() - started);
    }
    // What arrived since the page was opened is marked in the log.
    const fresh = await page.$$eval("#log tr.fresh", (rows) => rows.map((r) => r.dataset.number));
    assert.deepEqual(fresh, Array.from({ length: ROUNDS }, (_, i) => String(MESSAGES + i)));
  });

  it("reports what it measured", { skip: !REPORT }, async () => {
    // What the server holds beyond the data: the same page on a context of
    // one message (the binary, its runtime, the tokenizer).
    const small = path.join(dir, "small.jsonl");
    writeFileSync(small, `${JSON.stringify({ type: "state", data: { title: "small" } })}\n`);
    const base = await Server.start(small);
    try {
      await page.goto(base.url);
      await rendered(page, 1, 1);
      const peak = peakMemory(server.child.pid);
      const held = peak - peakMemory(base.child.pid);
      const rows = [
        row("INSPECT-usable-vs-1s", "1 s: the page usable (views, log, plan, prompt shown) after opening", measured.usable, 1000),
        row("INSPECT-jump-vs-1s", "1 s: a point typed in, shown whole", measured.jump, 1000),
        row("INSPECT-live-vs-1s", "1 s: an append by another process, shown", measured.live, 1000),
        {
          workload: "INSPECT-memory-vs-log",
          ratio: held / logBytes,
          rounds: 1,
          // As the bench prints a memory row: what the data costs, the log, the peak.
          context_rss_bytes: held,
          jsonl_bytes: logBytes,
          peak_rss_bytes: peak,
          baseline: "the log's bytes; held: the server's peak resident set less its peak on a one-message context",
        },
      ];
      writeFileSync(REPORT, `${JSON.stringify(rows, null, 2)}\n`);
    } finally {
      await base.stop();
    }
  });
});
