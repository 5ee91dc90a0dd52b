// Where values came from and what changed, on `agentctx inspect`'s page
// (loaded before inspect.js, whose helpers it calls once the page is
// shown): the messages that made a value, each with the call it
// answered, and the changes between two points, named as references.
"use strict";

// ---- provenance --------------------------------------------------------

async function showProvenance(where, path) {
  const box = $("provenance");
  box.hidden = false;
  box.replaceChildren(element("span", null, "looking…"));
  const current = ask("provenance");
  try {
    const found = await api("/api/provenance", {
      kind: where.kind, instance: where.instance, path: JSON.stringify(path), at: state.at,
    });
    if (!current()) return;
    const title = `${reference(where.kind, path)}${where.instance ? ` (instance ${where.instance})` : ""}` +
      " was made by message(s): ";
    box.replaceChildren(element("span", null, title));
    const described = new Map(found.made.map((m) => [m.number, m]));
    const list = element("ul", "made");
    for (const number of found.messages) {
      const made = described.get(number);
      if (!made) {
        const link = element("button", null, `#${number}`);
        link.type = "button";
        link.addEventListener("click", () => pickMessage(number));
        box.appendChild(link);
        continue;
      }
      const item = element("li");
      item.dataset.number = String(number);
      const link = element("button", null, `#${number}`);
      link.type = "button";
      link.addEventListener("click", () => pickMessage(number));
      item.appendChild(link);
      item.appendChild(element("span", null, ` ${describeWrite(made)}`));
      if (made.call && typeof made.call === "object") {
        const inputs = element("button", "more", "inputs");
        inputs.type = "button";
        inputs.title = "the call's parameters, resolved as they read just before this message";
        inputs.addEventListener("click", async () => {
          try {
            const got = await api("/api/inputs", { n: number });
            const shown = got.inputs
              ? shortJson(Object.fromEntries(Object.entries(got.inputs).filter(([k]) => !k.startsWith("_"))), 400)
              : `missing ${got.missing.join(", ")}`;
            inputs.replaceWith(element("span", "inputs", ` inputs: ${shown}`));
          } catch (e) {
            inputs.replaceWith(element("span", "inputs", ` inputs: ${e.message}`));
          }
        });
        item.appendChild(inputs);
      }
      list.appendChild(item);
    }
    box.appendChild(list);
    if (found.messages.length === 0) box.appendChild(element("span", null, "none"));
    const close = element("button", null, "×");
    close.type = "button";
    close.addEventListener("click", () => { box.hidden = true; });
    box.appendChild(close);
  } catch (e) {
    box.replaceChildren(element("span", null, `error: ${e.message}`));
  }
}

// What one message wrote and why, as a line: its method and path, the
// call it answered (tool and inputs as the call held them), its date, and
// how long and by which worker it ran where that is recorded.
function describeWrite(m) {
  const parts = [];
  if (m.method) parts.push(`${m.method}${m.path ? ` ${typeof m.path === "string" ? m.path : shortJson(m.path)}` : ""}`);
  else parts.push(m.type);
  if (m.call && typeof m.call === "object") {
    const inputs = Object.fromEntries(Object.entries(m.call).filter(([k]) => !k.startsWith("_")));
    parts.push(`by ${m.call._tool ?? "a call"}(${shortJson(inputs, 120).slice(1, -1)})`);
    // Which of the call's outcomes this is, when it has more than one.
    const outcomes = typeof m.call._outputPath === "string"
      ? m.call._outputPath.split("||").map((p) => p.trim()) : [];
    const taken = typeof m.path === "string" ? outcomes.indexOf(m.path.trim()) : -1;
    if (outcomes.length > 1 && taken >= 0) {
      parts.push(taken === 0 ? "outcome 0 (success)" : `outcome ${taken} (its failure or another outcome)`);
    }
  } else if (m.callAt !== null && m.callAt !== undefined) {
    parts.push(`by the call of #${m.callAt}`);
  }
  if (m.date) parts.push(m.date);
  // How long it ran and who ran it, where the runner recorded it (R21b).
  if (m.ms !== null && m.ms !== undefined) parts.push(`took ${took(m)}`);
  if (typeof m.worker === "string") {
    parts.push(`worker ${m.worker}${m.attempt !== null && m.attempt !== undefined ? `, attempt ${m.attempt}` : ""}`);
  }
  return parts.join(" · ");
}

// ---- diff --------------------------------------------------------------

function diffValues(before, after, path, out, depth) {
  if (JSON.stringify(before) === JSON.stringify(after)) return;
  const objects = before && after && typeof before === "object" && typeof after === "object" &&
    Array.isArray(before) === Array.isArray(after);
  if (!objects || depth >= TREE_DEPTH) {
    out.push({ path, before, after });
    return;
  }
  // Own members only: a key such as "constructor" is not the prototype's.
  const member = (value, key) => (Object.hasOwn(value, key) ? value[key] : undefined);
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const key of keys) {
    const step = Array.isArray(after) ? Number(key) : key;
    diffValues(member(before, key), member(after, key), path.concat([step]), out, depth + 1);
  }
}

// Every view a diff compares, by where it is read: `{kind, instance}`.
// An instance's view is as it reads it: a kind it had not written yet (or
// an instance that did not exist yet) reads the global view, so what it
// only inherits is not a change.
function readViews(old, now) {
  const all = new Map();
  const key = (kind, instance) => JSON.stringify([kind, instance ?? null]);
  const globalOf = (views, kind) => (Object.hasOwn(views.global, kind) ? views.global[kind] : undefined);
  for (const views of [old, now]) {
    for (const kind of Object.keys(views.global)) all.set(key(kind), { kind });
    for (const [id, kinds] of Object.entries(views.instances)) {
      for (const kind of Object.keys(kinds)) all.set(key(kind, id), { kind, instance: id });
    }
  }
  const read = (views, { kind, instance }) => {
    if (instance === undefined) return globalOf(views, kind);
    const own = Object.hasOwn(views.instances, instance) ? views.instances[instance] : undefined;
    return own && Object.hasOwn(own, kind) ? own[kind] : globalOf(views, kind);
  };
  return [...all.values()].map((where) => ({ where, before: read(old, where), after: read(now, where) }));
}

// What `root` holds at `path`, or undefined.
function valueAt(root, path) {
  let here = root;
  for (const step of path) {
    if (here === null || typeof here !== "object" || !Object.hasOwn(here, step)) return undefined;
    here = here[step];
  }
  return here;
}

// A path as a reference names it: `†state.user.tags[0]`, a key that is
// not a name in brackets (`†state["a b"]`).
function reference(kind, path) {
  const segments = path.map((p) => (typeof p === "number" ? `[${p}]`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`));
  return `†${kind}${segments.join("")}`;
}

async function showDiff() {
  const list = $("diff");
  list.replaceChildren();
  const current = ask("diff");
  try {
    const from = Number($("diff-from").value);
    const [old, now] = await Promise.all([
      api("/api/views", { at: from }), api("/api/views", { at: state.at }),
    ]);
    if (!current()) return;
    const changes = [];
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    for (const { where, before, after } of readViews(old, now)) {
      const found = [];
      diffValues(before, after, [], found, 0);
      for (const change of found) {
        // An instance's change that is the global view's own, read through
        // it at both points, is shown once, as the global change.
        const inherited = where.instance !== undefined &&
          same(change.before, valueAt(Object.hasOwn(old.global, where.kind) ? old.global[where.kind] : undefined, change.path)) &&
          same(change.after, valueAt(Object.hasOwn(now.global, where.kind) ? now.global[where.kind] : undefined, change.path));
        if (!inherited) changes.push({ where, ...change });
      }
    }
    for (const { where, path, before: b, after: a } of changes.slice(0, 1000)) {
      const kind = b === undefined ? "added" : a === undefined ? "removed" : "changed";
      const named = `${reference(where.kind, path)}${where.instance ? ` (instance ${where.instance})` : ""}`;
      const text = kind === "added" ? `+ ${named}: ${shortJson(a)}`
        : kind === "removed" ? `- ${named}: ${shortJson(b)}`
          : `~ ${named}: ${shortJson(b)} → ${shortJson(a)}`;
      // A click names the messages that made what is there now.
      const line = element("li", kind, text);
      line.dataset.path = JSON.stringify(path);
      line.title = "the messages that made it";
      line.addEventListener("click", () => showProvenance(where, path));
      list.appendChild(line);
    }
    if (changes.length === 0) list.appendChild(element("li", null, `nothing changed between ${old.at} and ${now.at}`));
    if (changes.length > 1000) list.appendChild(element("li", null, `${changes.length - 1000} more changes`));
  } catch (e) {
    list.appendChild(element("li", "removed", `error: ${e.message}`));
  }
}
