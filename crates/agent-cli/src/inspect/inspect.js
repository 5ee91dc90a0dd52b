// The page of `agentctx inspect`: reads /api/ only (docs/inspect.md) and
// shows the context at the point chosen (`/?at=K`, the first K messages),
// or the latest one, following the context as it grows.
//
// Once a point is fully shown, body[data-at] and body[data-length] say
// which: tests and tools wait on them.
"use strict";

const $ = (id) => document.getElementById(id);
// Containers show this many children before a "show all" line.
const SHOWN_CHILDREN = 500;
// Instances shown before the filter is needed to find the others.
const SHOWN_INSTANCES = 100;
// Nesting rendered as a tree; deeper values are shown as JSON text.
const TREE_DEPTH = 40;
// Messages per page of the log.
const PAGE = 100;
// Chat messages per page of the prompt.
const PROMPT_PAGE = 20;

// `at`: the point shown, null for the latest (followed as it grows);
// `page`: the log page asked for, `{from: N}` or `{before: N}`, null for
// the last one; `next`, `previous`: where the pages beside it start, as
// the API said; `shown`, `asked`: which show() and which answer of each
// other section is the newest, so an older one stops writing;
// `storeError`: a failure to read what was appended, standing until the
// server reads again.
const state = {
  length: 0,
  at: pointFromUrl(),
  page: null,
  next: null,
  previous: null,
  asked: { log: 0, provenance: 0, diff: 0, tokens: 0, prompt: 0, instances: 0 },
  storeError: "",
  badPoint: badPointInUrl(),
  // The length last shown while following: rows after it are new.
  seen: null,
  views: null,
  // Instance views opened ("kind\0id"), opened again at the next point.
  open: new Set(),
  shown: 0,
  busy: false,
  again: false,
};

function pointFromUrl() {
  const text = new URLSearchParams(location.search).get("at");
  return text === null || text === "" || !/^\d+$/.test(text) ? null : Number(text);
}

// What `?at=` said when it is not a point: the server says why, and the
// page shows it instead of another point.
function badPointInUrl() {
  const text = new URLSearchParams(location.search).get("at");
  return text !== null && text !== "" && !/^\d+$/.test(text) ? text : null;
}

async function api(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  const response = await fetch(text ? `${path}?${text}` : path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function shortJson(value, max = 240) {
  const text = value === undefined ? "(absent)" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

// ---- views -------------------------------------------------------------

// A JSON value as a collapsible tree; each leaf knows its path, so a click
// asks which messages made it.
function tree(value, where, path, depth) {
  if (value === null || typeof value !== "object") {
    const leaf = element("span", `value ${leafClass(value)}`, JSON.stringify(value));
    leaf.dataset.path = JSON.stringify(path);
    leaf.addEventListener("click", (e) => {
      e.stopPropagation();
      showProvenance(where, path);
    });
    return leaf;
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (depth >= TREE_DEPTH) {
    const deep = element("span", "value", JSON.stringify(value));
    deep.dataset.path = JSON.stringify(path);
    deep.addEventListener("click", () => showProvenance(where, path));
    return deep;
  }
  const box = element("details");
  box.open = depth < 3;
  const summary = element("summary", null, isArray ? `[${entries.length}]` : `{${entries.length}}`);
  summary.dataset.path = JSON.stringify(path);
  summary.addEventListener("click", (e) => {
    if (e.altKey) {
      e.preventDefault();
      showProvenance(where, path);
    }
  });
  box.appendChild(summary);
  const addChildren = (list) => {
    for (const [key, child] of list) {
      const row = element("div", "node");
      row.appendChild(element("span", "key", isArray ? `${key}: ` : `${JSON.stringify(key)}: `));
      row.appendChild(tree(child, where, path.concat([key]), depth + 1));
      box.appendChild(row);
    }
  };
  addChildren(entries.slice(0, SHOWN_CHILDREN));
  if (entries.length > SHOWN_CHILDREN) {
    const more = element("button", "more", `show ${entries.length - SHOWN_CHILDREN} more`);
    more.type = "button";
    more.addEventListener("click", () => {
      more.remove();
      addChildren(entries.slice(SHOWN_CHILDREN));
    });
    box.appendChild(more);
  }
  return box;
}

function leafClass(value) {
  if (typeof value === "string") return "string";
  if (typeof value === "number") return "number";
  return "literal";
}

function scope(name, attrs, value, where) {
  const box = element("details");
  box.open = attrs.scope === "global";
  Object.assign(box.dataset, attrs);
  box.appendChild(element("summary", null, name));
  const body = element("div", "tree");
  body.appendChild(tree(value, where, [], 0));
  box.appendChild(body);
  return box;
}

// An instance's view of `kind`, collapsed with its count of messages; its
// tree is asked for when it is opened (a context may hold thousands).
function instanceScope(instance, kind, at) {
  const box = element("details");
  Object.assign(box.dataset, { scope: "instance", instance: instance.id });
  const messages = instance.messages === 1 ? "1 message" : `${instance.messages} messages`;
  box.appendChild(element("summary", null, `instance ${instance.id} · ${messages}`));
  const body = element("div", "tree");
  box.appendChild(body);
  const key = `${kind}\u0000${instance.id}`;
  const load = async () => {
    if (!box.open) {
      state.open.delete(key);
      return;
    }
    state.open.add(key);
    if (box.dataset.loaded) return;
    box.dataset.loaded = "asked";
    try {
      const views = await api("/api/views", { at, instance: instance.id });
      const value = (views.instances[instance.id] || {})[kind];
      body.replaceChildren(tree(value, { kind, instance: instance.id }, [], 0));
      box.dataset.loaded = "yes";
    } catch (e) {
      body.replaceChildren(element("p", "state failed", `error: ${e.message}`));
      delete box.dataset.loaded;
    }
  };
  box.addEventListener("toggle", load);
  box.open = state.open.has(key);
  return box;
}

function renderViews(views, list) {
  const out = $("views");
  out.replaceChildren();
  for (const kind of views.kinds) {
    const section = element("section", "kind");
    section.dataset.kind = kind;
    section.appendChild(element("h3", null, kind));
    if (Object.prototype.hasOwnProperty.call(views.global, kind)) {
      section.appendChild(scope("global", { scope: "global" }, views.global[kind], { kind }));
    }
    for (const instance of list.instances.filter((x) => x.kinds.includes(kind))) {
      section.appendChild(instanceScope(instance, kind, views.at));
    }
    out.appendChild(section);
  }
  const unlisted = list.matching - list.instances.length;
  if (unlisted > 0) {
    out.appendChild(element("p", "more",
      `${unlisted} more of ${list.total} instances: find one with the filter above`));
  }
  if (views.kinds.length === 0) out.appendChild(element("p", "hint", "No data yet."));
}

async function loadInstances() {
  return api("/api/instances", {
    at: state.at, limit: SHOWN_INSTANCES, q: $("instance-filter").value.trim(),
  });
}

// ---- log ---------------------------------------------------------------

// Starts an answer for `section`; the function it returns says whether
// that answer is still the newest asked for.
function ask(section) {
  const mine = ++state.asked[section];
  return () => mine === state.asked[section];
}

function logParams() {
  const end = state.at === null ? state.length : state.at;
  const page = state.page || { before: end };
  return {
    ...page, limit: PAGE, at: state.at,
    kind: $("filter-kind").value.trim(),
    instance: $("filter-instance").value.trim(),
    q: $("filter-q").value.trim(),
  };
}

function renderLog(log, picked) {
  const rows = $("log");
  rows.replaceChildren();
  for (const m of log.messages) {
    const row = element("tr");
    row.dataset.number = String(m.number);
    if (m.number === picked) row.classList.add("picked");
    if (state.seen !== null && m.number >= state.seen) row.classList.add("fresh");
    const number = element("td", "number");
    const go = element("button", null, String(m.number));
    go.type = "button";
    go.title = `show the context after message ${m.number}`;
    go.addEventListener("click", () => goTo(m.number + 1));
    number.appendChild(go);
    row.appendChild(number);
    const tool = m.call && typeof m.call === "object" ? m.call._tool : null;
    for (const text of [m.type, m.kind, m.instance, m.method, m.path]) {
      row.appendChild(element("td", null, text));
    }
    // A date to the second on one line; the whole of it on hover.
    const date = element("td", "date", typeof m.date === "string" ? m.date.replace("T", " ").slice(0, 19) : null);
    if (typeof m.date === "string") date.title = m.date;
    row.appendChild(date);
    row.appendChild(element("td", null, tool));
    // One line; a click shows the whole message, indented, and the chain's
    // digest after it.
    const body = element("td", "message", JSON.stringify(m.message));
    body.addEventListener("click", () => openMessage(row, m));
    row.appendChild(body);
    rows.appendChild(row);
  }
  // The number column as wide as the largest number it may show.
  const digits = String(Math.max(state.length, 1)).length;
  document.querySelector("#log-table col.n").style.width = `${digits + 2}ch`;
  const end = state.at === null ? state.length : state.at;
  const first = log.messages.length ? log.messages[0].number : null;
  $("page").textContent = first === null ? "no messages"
    : `${first}–${log.messages[log.messages.length - 1].number} of ${end}`;
  state.next = log.next;
  state.previous = log.previous;
}

// Opens a message in a row of its own under it, the table's whole width:
// indented, with the chain's digest after it. A second click closes it.
async function openMessage(row, m) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains("detail")) {
    next.remove();
    row.classList.remove("open");
    return;
  }
  row.classList.add("open");
  const detail = element("tr", "detail");
  detail.dataset.detail = String(m.number);
  const cell = element("td");
  cell.colSpan = row.children.length;
  cell.appendChild(element("pre", "pretty", JSON.stringify(m.message, null, 2)));
  detail.appendChild(cell);
  row.after(detail);
  try {
    const chained = await api("/api/digest", { n: m.number });
    cell.appendChild(element("div", "digest", `chain digest after #${m.number}: ${chained.digest}`));
  } catch (e) {
    cell.appendChild(element("div", "digest", `digest: ${e.message}`));
  }
}

async function loadLog(picked) {
  const current = ask("log");
  const log = await api("/api/log", logParams());
  if (current()) renderLog(log, picked);
  return log;
}

function turnPage(page) {
  state.page = page;
  loadLog(null).catch(fail);
}

async function pickMessage(number) {
  state.page = { from: Math.max(0, number - Math.floor(PAGE / 2)) };
  try {
    await loadLog(number);
    const row = document.querySelector(`#log tr[data-number="${number}"]`);
    if (row) row.scrollIntoView({ block: "center" });
  } catch (e) {
    fail(e);
  }
}

// ---- plan and prompt ---------------------------------------------------

function renderPrompt(answer) {
  if (answer.error) {
    $("tokens").textContent = "";
    $("prompt").replaceChildren(element("p", "state failed", `error: ${answer.error}`));
    return;
  }
  // Counting a large prompt's tokens takes longer than showing it, and
  // the tokenizer's memory: counted when asked.
  const count = element("button", "more", "count tokens");
  count.type = "button";
  count.addEventListener("click", () => countTokens(answer.at, answer.mode));
  ask("tokens");
  $("tokens").replaceChildren(`${answer.count} message(s) `, count);
  $("prompt").replaceChildren();
  addPromptMessages(answer);
}

// Appends a page of the prompt's messages; a cut text and the messages
// after the page are a click away.
function addPromptMessages(answer) {
  const out = $("prompt");
  const where = { at: answer.at, mode: answer.mode };
  for (const m of answer.messages) {
    const turn = element("div", "turn");
    turn.dataset.index = String(m.index);
    turn.appendChild(element("span", "role", `${m.role}`));
    turn.appendChild(element("span", null, ` · ${m.tokens} tokens`));
    const text = element("pre", null, m.text);
    turn.appendChild(text);
    if (m.cut) {
      const whole = element("button", "more", `show all ${m.bytes} bytes`);
      whole.type = "button";
      whole.addEventListener("click", async () => {
        try {
          const one = await api("/api/prompt", { ...where, from: m.index, limit: 1, chars: 1000000 });
          text.textContent = one.messages[0]?.text ?? "";
          if (one.messages[0]?.cut) whole.textContent = "cut at 1,000,000 characters: the API's limit";
          else whole.remove();
        } catch (e) {
          fail(e);
        }
      });
      turn.appendChild(whole);
    }
    out.appendChild(turn);
  }
  const shown = answer.from + answer.messages.length;
  if (shown < answer.count) {
    const more = element("button", "more",
      `show ${Math.min(PROMPT_PAGE, answer.count - shown)} more of ${answer.count - shown} message(s)`);
    more.type = "button";
    more.addEventListener("click", async () => {
      try {
        const next = await api("/api/prompt", { ...where, from: shown, limit: PROMPT_PAGE });
        more.remove();
        addPromptMessages(next);
      } catch (e) {
        fail(e);
      }
    });
    out.appendChild(more);
  }
}

// The whole payload's tokens, counted by the server.
async function countTokens(at, mode) {
  const current = ask("tokens");
  $("tokens").textContent = "counting tokens…";
  try {
    const counted = await api("/api/prompt", { at, mode, limit: 0, tokens: 1 });
    if (current()) {
      $("tokens").textContent =
        `${counted.tokens} tokens (${counted.encoding}) in ${counted.count} message(s)`;
    }
  } catch (e) {
    if (current()) $("tokens").textContent = `tokens not counted: ${e.message}`;
  }
}

async function loadPrompt() {
  const mode = $("prompt-mode").value;
  const current = ask("prompt");
  const answer = await api("/api/prompt", { at: state.at, mode, limit: PROMPT_PAGE });
  if (current()) renderPrompt(answer);
}

// ---- the point shown ---------------------------------------------------

function fail(e) {
  $("status").textContent = `error: ${e.message}`;
}

// A show asked for while one runs is run once, after it: appends that
// arrive faster than a point is shown do not pile up requests.
async function show() {
  if (state.busy) {
    state.again = true;
    return;
  }
  state.busy = true;
  try {
    do {
      state.again = false;
      await showOnce();
    } while (state.again);
  } finally {
    state.busy = false;
  }
}

async function showOnce() {
  const mine = ++state.shown;
  if (state.badPoint !== null) {
    // The server's own words for what is wrong with it.
    try {
      await api("/api/views", { at: state.badPoint });
    } catch (e) {
      fail(e);
      document.body.dataset.error = e.message;
    }
    return;
  }
  try {
    const [views, list] = await Promise.all([
      api("/api/views", { at: state.at, instances: "none" }), loadInstances(),
    ]);
    if (mine !== state.shown) return;
    state.length = views.length;
    state.views = views;
    // The plan and the prompt say their own errors where they are shown.
    const failed = (e) => ({ error: e.message });
    const promptAsked = ask("prompt");
    const [log, plan, prompt] = await Promise.all([
      loadLog(null), api("/api/plan", { at: state.at }).catch(failed),
      api("/api/prompt", { at: state.at, mode: $("prompt-mode").value, limit: PROMPT_PAGE })
        .catch(failed),
    ]);
    if (mine !== state.shown) return;
    $("context").textContent = log.context;
    renderViews(views, list);
    renderPlan(plan);
    if (promptAsked()) renderPrompt(prompt);
    showPoint(views.at, views.length);
    $("status").textContent = state.storeError;
    // Following: what arrives after what this showed is marked.
    if (state.at === null && state.seen === null) state.seen = views.length;
    document.body.dataset.length = String(views.length);
    document.body.dataset.at = String(views.at);
  } catch (e) {
    if (mine === state.shown) fail(e);
  }
}

function showPoint(at, length) {
  $("length").textContent = String(length);
  $("slider").max = String(length);
  $("slider").value = String(at);
  $("at").max = String(length);
  $("at").value = String(at);
  $("live").textContent = state.at === null ? "● following" : "";
}

function goTo(point) {
  state.at = point;
  state.badPoint = null;
  state.seen = null;
  delete document.body.dataset.error;
  state.page = null;
  history.replaceState(null, "", state.at === null ? "/" : `/?at=${state.at}`);
  show();
}

$("slider").addEventListener("input", () => { $("at").value = $("slider").value; });
$("slider").addEventListener("change", () => goTo(Number($("slider").value)));
$("at").addEventListener("change", () => goTo(Number($("at").value)));
$("latest").addEventListener("click", () => goTo(null));
$("instance-filter").addEventListener("input", async () => {
  if (!state.views) return;
  const views = state.views;
  const current = ask("instances");
  try {
    const list = await loadInstances();
    if (current() && views === state.views) renderViews(views, list);
  } catch (e) {
    fail(e);
  }
});
for (const id of ["filter-kind", "filter-instance", "filter-q"]) {
  $(id).addEventListener("change", () => turnPage(null));
}
$("first").addEventListener("click", () => turnPage({ from: 0 }));
$("prev").addEventListener("click", () => {
  if (state.previous !== null) turnPage({ before: state.previous + 1 });
});
$("next").addEventListener("click", () => {
  if (state.next !== null) turnPage({ from: state.next });
});
$("last").addEventListener("click", () => turnPage(null));
$("prompt-mode").addEventListener("change", () => loadPrompt().catch(fail));
$("diff-go").addEventListener("click", showDiff);

const events = new EventSource("/api/events");
events.addEventListener("messages", (e) => {
  state.storeError = "";
  const grown = JSON.parse(e.data);
  // What was shown before this append stays unmarked; what it added is
  // marked (a page that showed nothing yet marks from here).
  if (state.at === null && state.seen === null) state.seen = grown.from;
  state.length = grown.length;
  $("length").textContent = String(state.length);
  $("slider").max = String(state.length);
  if (state.at === null) show();
});
events.addEventListener("error", (e) => {
  if (!e.data) return;
  state.storeError = `error: ${JSON.parse(e.data).error}`;
  $("status").textContent = state.storeError;
});
show();
