// The plan section of `agentctx inspect`'s page (loaded before
// inspect.js, whose helpers it calls once the page is shown): the newest
// plan's calls as a graph and as a table, each call's standing, how long
// it took and the message that answered it.
"use strict";

// The plan's calls as a graph: a column per depth (a call stands right
// of every call it comes after), an arrow per dependency, each box
// coloured by its standing; a click on a call that ran shows its result.
const SVG = "http://www.w3.org/2000/svg";
const GRAPHED_CALLS = 300;

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// How long a call's activity took, from its answer's `_started` to its
// `_date`: "—" when the log does not say.
function took(call) {
  if (call.ms === null || call.ms === undefined) return "—";
  if (call.ms < 1000) return `${call.ms} ms`;
  if (call.ms < 60000) return `${(call.ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(call.ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

function planGraph(calls) {
  if (calls.length > GRAPHED_CALLS) {
    return element("p", "hint", `${calls.length} calls: too many to draw; the table lists them`);
  }
  const depth = [];
  const depthOf = (index, seen = new Set()) => {
    if (depth[index] !== undefined) return depth[index];
    if (seen.has(index)) return 0;
    seen.add(index);
    const before = calls[index].dependsOn || [];
    depth[index] = before.length ? 1 + Math.max(...before.map((d) => depthOf(d, seen))) : 0;
    return depth[index];
  };
  const rowsOf = [];
  const at = calls.map((call, index) => {
    const column = depthOf(index);
    rowsOf[column] = (rowsOf[column] || 0) + 1;
    return { column, row: rowsOf[column] - 1 };
  });
  const [width, height, gapX, gapY] = [128, 34, 26, 10];
  const x = (i) => 4 + at[i].column * (width + gapX);
  const y = (i) => 4 + at[i].row * (height + gapY);
  const graph = svg("svg", {
    class: "plan-graph",
    width: 8 + rowsOf.length * (width + gapX) - gapX,
    height: 8 + Math.max(1, ...rowsOf) * (height + gapY) - gapY,
    role: "img",
    "aria-label": "the plan's calls and what each comes after",
  });
  calls.forEach((call, index) => {
    for (const before of call.dependsOn || []) {
      graph.appendChild(svg("line", {
        class: "edge", x1: x(before) + width, y1: y(before) + height / 2, x2: x(index), y2: y(index) + height / 2,
      }));
    }
  });
  calls.forEach((call, index) => {
    const box = svg("g", { class: `call ${call.state}`, "data-call": index });
    box.appendChild(svg("rect", { x: x(index), y: y(index), width, height, rx: 5 }));
    box.appendChild(svg("text", { x: x(index) + 6, y: y(index) + 14 }, `#${index} ${call.tool}`.slice(0, 17)));
    const timed = call.ms === null || call.ms === undefined ? "" : ` · ${took(call)}`;
    box.appendChild(svg("text", { x: x(index) + 6, y: y(index) + 28, class: "standing" },
      `${call.state}${timed || (call.instance ? ` · ${call.instance}` : "")}`.slice(0, 19)));
    box.appendChild(svg("title", {}, `call ${index}: ${call.tool}, ${call.state}` +
      `${call.reason ? ` (${call.reason})` : ""}${timed ? `, took ${took(call)}` : ""}` +
      `${call.result !== null && call.result !== undefined ? `; result #${call.result}` : ""}`));
    if (call.result !== null && call.result !== undefined) {
      box.addEventListener("click", () => pickMessage(call.result));
    }
    graph.appendChild(box);
  });
  const frame = element("div", "plan-graph");
  frame.appendChild(graph);
  return frame;
}

function renderPlan(answer) {
  const out = $("plan");
  out.replaceChildren();
  if (answer.error) {
    out.appendChild(element("p", "state failed", `error: ${answer.error}`));
    return;
  }
  const plan = answer.plan;
  if (!plan) {
    out.appendChild(element("p", "hint", "No plan among these messages."));
    return;
  }
  out.appendChild(element("p", null, `The ${plan.sort} plan of message #${plan.number}`));
  if (plan.error) {
    out.appendChild(element("p", "state failed", plan.error));
    return;
  }
  out.appendChild(planGraph(plan.calls));
  const table = element("table");
  const head = element("tr");
  for (const h of ["#", "tool", "instance", "state", "why", "after", "worker", "attempts", "error",
    "started", "took", "result"]) {
    head.appendChild(element("th", null, h));
  }
  table.appendChild(head);
  for (const call of plan.calls) {
    const row = element("tr");
    row.dataset.call = String(call.index);
    row.appendChild(element("td", null, call.index));
    row.appendChild(element("td", null, call.tool));
    row.appendChild(element("td", null, call.instance));
    row.appendChild(element("td", `state ${call.state}`, call.state));
    for (const text of [call.reason, (call.dependsOn || []).join(", "), call.worker,
      call.attempts, call.error, call.started]) {
      row.appendChild(element("td", null, text));
    }
    row.appendChild(element("td", "took", took(call)));
    const result = element("td", "result");
    if (call.result !== null && call.result !== undefined) {
      const link = element("button", null, `#${call.result}`);
      link.type = "button";
      link.title = "the message that answered this call";
      link.addEventListener("click", () => pickMessage(call.result));
      result.appendChild(link);
    }
    row.appendChild(result);
    table.appendChild(row);
  }
  const frame = element("div", "plan-table");
  frame.appendChild(table);
  out.appendChild(frame);
}
