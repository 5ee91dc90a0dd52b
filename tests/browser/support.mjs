// What the browser tests share: the agentctx binary they run (AGENTCTX_BIN,
// set by `cargo xtask browser`), a running `agentctx inspect` server, and
// the wait on the page's DOM contract (docs/inspect.md, "Tests in a real
// browser"): `body[data-at][data-length]`, never a sleep.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import http from "node:http";

export const BIN = process.env.AGENTCTX_BIN;
/** How long the page may take to show a point. */
export const RENDER_MS = 20_000;

if (!BIN) {
  throw new Error("set AGENTCTX_BIN to the agentctx binary (cargo xtask browser does)");
}

/** `agentctx ARGS` to its end: its exit code and output. */
export function agentctx(args) {
  return new Promise((resolve) => {
    execFile(BIN, args, { timeout: RENDER_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr });
    });
  });
}

export async function append(context, messages) {
  const run = await agentctx(["append", context, JSON.stringify(messages)]);
  assert.equal(run.code, 0, `agentctx append failed: ${run.stderr}`);
}

// Every inspect process started, killed when this file's process exits,
// also on a signal, and every temporary directory made, removed then: a
// failing or interrupted run leaves no server and no file behind.
const children = new Set();
export const directories = new Set();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => process.exit(1));
}

/** A running `agentctx inspect CONTEXT`. */
export class Server {
  static async start(context) {
    const child = spawn(BIN, ["inspect", context], { stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const line = await new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`inspect printed no URL in time: ${stderr}`)), 20_000);
      child.stdout.on("data", (chunk) => {
        out += chunk;
        if (out.includes("\n")) {
          clearTimeout(timer);
          resolve(out.split("\n")[0]);
        }
      });
      child.on("exit", (code) => reject(new Error(`inspect exited (${code}): ${stderr}`)));
    });
    const port = /^http:\/\/127\.0\.0\.1:(\d+)\/$/.exec(line)?.[1];
    assert.ok(port, `not the URL: ${JSON.stringify(line)}`);
    return new Server(child, line, Number(port));
  }

  constructor(child, url, port) {
    this.child = child;
    this.url = url;
    this.port = port;
    this.origin = new URL(url).origin;
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill();
      await exited;
    }
    children.delete(this.child);
  }

  /** `GET path` over plain HTTP with `Host: host`: status and body. */
  get(pathname, host = `127.0.0.1:${this.port}`) {
    return new Promise((resolve, reject) => {
      const request = http.get(
        { host: "127.0.0.1", port: this.port, path: pathname, headers: { Host: host } },
        (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk) => (body += chunk));
          response.on("end", () => resolve({ status: response.statusCode, body }));
        },
      );
      request.setTimeout(RENDER_MS, () => request.destroy(new Error(`GET ${pathname}: no answer`)));
      request.on("error", reject);
    });
  }

  async json(pathname) {
    const response = await this.get(pathname);
    assert.equal(response.status, 200, `${pathname}: ${response.body}`);
    return JSON.parse(response.body);
  }

  /** The message numbers /api/log lists (among the first `at`). */
  async numbers(at) {
    const query = at === undefined ? "" : `&at=${at}`;
    const log = await this.json(`/api/log?limit=1000${query}`);
    return log.messages.map((m) => String(m.number));
  }
}

/** Waits until the page has finished rendering point `at` of `length`. */
export async function rendered(page, at, length, timeout = RENDER_MS) {
  try {
    await page.waitForFunction(
      (at, length) =>
        document.body?.dataset.at === at && document.body?.dataset.length === length,
      { timeout },
      String(at),
      String(length),
    );
  } catch (e) {
    const state = await page.evaluate(() => ({
      at: document.body?.dataset.at,
      length: document.body?.dataset.length,
      status: document.getElementById("status")?.textContent,
    }));
    throw new Error(
      `the page did not show point ${at} of ${length} within ${timeout} ms ` +
        `(body data-at=${state.at}, data-length=${state.length}, #status=${JSON.stringify(state.status)}): ${e.message}`,
    );
  }
}

