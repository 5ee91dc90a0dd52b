// The page of `agentctx inspect`: reads /api/ and shows the log and the
// views at the point chosen (`/?at=K`), following the context as it grows.
"use strict";

const $ = (id) => document.getElementById(id);
let length = 0;
// The point shown: a number of messages, or null for the latest.
let at = new URLSearchParams(location.search).get("at");
at = at === null || at === "" ? null : Number(at);

async function api(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  row.appendChild(td);
}

async function show() {
  const query = at === null ? "" : `?at=${at}`;
  try {
    const views = await api(`/api/views${query}`);
    $("views").textContent = JSON.stringify(
      { global: views.global, instances: views.instances }, null, 2);
    const log = await api(`/api/log${query}${query ? "&" : "?"}limit=1000`);
    $("context").textContent = log.context;
    length = log.length;
    $("length").textContent = String(length);
    $("at").value = String(views.at);
    const rows = $("log");
    rows.replaceChildren();
    for (const m of log.messages) {
      const row = document.createElement("tr");
      for (const text of [m.number, m.type, m.kind, m.instance, m.method, JSON.stringify(m.message)]) {
        cell(row, text);
      }
      rows.appendChild(row);
    }
    $("more").textContent = log.next === null ? "" : `more from message ${log.next}: /api/log?from=${log.next}`;
    $("status").textContent = "";
  } catch (e) {
    $("status").textContent = `error: ${e.message}`;
  }
}

function go(point) {
  at = point;
  history.replaceState(null, "", at === null ? "/" : `/?at=${at}`);
  show();
}

$("at").addEventListener("change", () => go(Number($("at").value)));
$("latest").addEventListener("click", () => go(null));
const events = new EventSource("/api/events");
events.addEventListener("messages", (e) => {
  length = JSON.parse(e.data).length;
  $("length").textContent = String(length);
  if (at === null) show();
});
events.addEventListener("error", (e) => {
  if (e.data) $("status").textContent = `error: ${JSON.parse(e.data).error}`;
});
show();
