// The Chromium the browser tests drive: the binary named by
// AGENTCTX_CHROMIUM, else the one @sparticuz/chromium carries in its npm
// package (unpacked into /tmp on first use, so no browser is downloaded).
// Run directly (`node chromium.mjs`), it starts one and stops it: a check
// that fails early, saying what to provide, before any test runs.

import chromium from "@sparticuz/chromium";
import puppeteer from "puppeteer-core";
import { fileURLToPath } from "node:url";

// Flags of @sparticuz/chromium's set (made for serverless scraping) that
// would loosen the same-origin rules the page must work under in a user's
// browser.
const LOOSENING = new Set(["--disable-web-security", "--allow-running-insecure-content"]);

const HELP =
  "set AGENTCTX_CHROMIUM to a Chromium binary that starts here " +
  "(Debian: apt install chromium, then AGENTCTX_CHROMIUM=/usr/bin/chromium)";

/** Starts a headless Chromium, or throws saying how to provide one. */
export async function launch() {
  const given = process.env.AGENTCTX_CHROMIUM;
  let options;
  try {
    options = given
      ? // As root (CI) Chromium refuses to start with its sandbox.
        { executablePath: given, headless: true, args: ["--no-sandbox"] }
      : {
          executablePath: await chromium.executablePath(),
          headless: "shell",
          args: chromium.args.filter((arg) => !LOOSENING.has(arg)),
        };
    return await puppeteer.launch(options);
  } catch (e) {
    const which = options?.executablePath ?? "@sparticuz/chromium's binary";
    throw new Error(`Chromium did not start (${which}): ${e.message}\n${HELP}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const browser = await launch();
    console.log(`chromium: ${await browser.version()} (${browser.process()?.spawnfile})`);
    await browser.close();
  } catch (e) {
    console.error(e.message);
    process.exitCode = 1;
  }
}
