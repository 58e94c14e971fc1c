// The operator's page: the overview of every controller's objects, and one object's view
// (`#object?controller=…&namespace=…&name=…`, so a link opens it). It reads the inspector's
// JSON API (api/objects, api/object) and listens to api/stream: a `changed` event names the
// object whose reconcile ended, and only the view showing it is fetched again. Under `ctop
// run --shadow`, shadow.js (loaded first) adds what the shadow would write: the views leave
// empty places for it (shadowSummary, shadowMark, shadowWrites) and show() has it fill them.
//
// Every string comes from the cluster or the script, so elements are built with
// createElement and text nodes, never from markup.
"use strict";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const live = document.getElementById("live");

// ---- building elements ------------------------------------------------------------------

// h("a", {class: "x", href: "#"}, "text", child, [more]): an element; strings become text.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// ---- where we are -----------------------------------------------------------------------

function route() {
  const hash = location.hash.slice(1);
  if (hash.startsWith("object?")) {
    const p = new URLSearchParams(hash.slice("object?".length));
    return { view: "object", controller: p.get("controller") || "", namespace: p.get("namespace") || "", name: p.get("name") || "" };
  }
  return { view: "overview" };
}

function objectQuery(controller, namespace, name) {
  const p = new URLSearchParams({ controller, name });
  if (namespace) p.set("namespace", namespace);
  return p.toString();
}

const objectHref = (controller, namespace, name) => "#object?" + objectQuery(controller, namespace, name);
const qualified = (namespace, name) => (namespace ? namespace + "/" + name : name);

// ---- small pieces -----------------------------------------------------------------------

function readyBadge(ready) {
  if (!ready) return h("span", { class: "badge ready-none", title: "no Ready condition yet" }, "—");
  return h("span", { class: "badge ready-" + ready.status, title: ready.message || null },
    ready.status, ready.reason ? h("span", { class: "reason" }, ready.reason) : null);
}

function healthBadge(health) {
  return h("span", { class: "health health-" + health.status, title: health.reason || null },
    h("span", { class: "dot" }), health.status,
    health.message ? h("span", { class: "message" }, health.message) : null);
}

// "12s ago" for an RFC 3339 time, with the time itself as the tooltip (kept current by
// the timer at the end).
function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "never");
  const t = new Date(iso);
  return h("time", { class: "ago", datetime: iso, title: t.toLocaleString() }, ago(t));
}

function ago(t) {
  const s = Math.max(0, Math.round((Date.now() - t.getTime()) / 1000));
  return s < 60 ? s + "s ago" : s < 3600 ? Math.floor(s / 60) + "m ago" : s < 86400 ? Math.floor(s / 3600) + "h ago" : t.toLocaleDateString();
}

function clock(iso) {
  const t = new Date(iso);
  return h("time", { datetime: iso, title: t.toLocaleString() }, t.toLocaleTimeString());
}

function endedBadge(ended) {
  if (!ended) return null;
  if (ended.type === "failed") {
    return h("span", { class: "result failed", title: ended.message }, "failed", h("span", { class: "reason" }, ended.reason),
      ended.terminal ? h("span", { class: "reason" }, "not retried") : null);
  }
  const next = ended.nextInSeconds != null ? "next in " + seconds(ended.nextInSeconds) : null;
  return h("span", { class: "result ok" }, "ok", next ? h("span", { class: "reason" }, next) : null);
}

function seconds(s) {
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 120) return Math.round(s) + " s";
  return Math.round(s / 60) + " min";
}

// "apps/v1/Deployment" → "Deployment".
const shortKind = (kind) => kind.slice(kind.lastIndexOf("/") + 1);

function triggerText(t) {
  switch (t.type) {
    case "started": return "operator started";
    case "relisted": return "relisted";
    case "changed": return t.generation != null ? "object changed (generation " + t.generation + ")" : "object changed";
    case "child": return (t.deleted ? "child deleted: " : "child changed: ") + shortKind(t.kind) + " " + t.name;
    case "watched": return "watched " + shortKind(t.kind) + " " + qualified(t.namespace, t.name);
    case "tick": return "periodic resync";
    case "requeue": return "requeue asked";
    case "retry": return "retry";
    case "scriptReplaced": return "script replaced";
    case "leader": return "became leader";
    default: return "other";
  }
}

// A status value as text: JSON for everything, so "True" and true differ; absent is "—".
const valueText = (v) => (v === null || v === undefined ? "—" : JSON.stringify(v));

function section(title, ...content) {
  return h("section", { class: "card" }, h("h2", null, title), content);
}

const isMap = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
// A condition's fields first, in the order kubectl prints them.
const FIRST = ["status", "reason", "message"];

// One changed field as [path, before, after] rows: a map (a condition) field by field,
// only the fields that changed.
function fieldChanges(path, before, after) {
  if (!(isMap(before) || isMap(after)) || !(isMap(before) || before == null) || !(isMap(after) || after == null)) {
    return [[path, before, after]];
  }
  const b = before || {};
  const a = after || {};
  const rank = (k) => (FIRST.includes(k) ? FIRST.indexOf(k) : FIRST.length);
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort((x, y) => rank(x) - rank(y) || x.localeCompare(y));
  return keys.filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k])).map((k) => [path + "." + k, b[k], a[k]]);
}

// Changed fields ({path, before, after}) as a table: path, before → after, a map (a
// condition) field by field.
function diffTable(changes) {
  return h("table", { class: "diff" }, h("tbody", null, changes.flatMap((f) => fieldChanges(f.path, f.before, f.after)).map(([path, before, after]) => h("tr", null,
    h("th", null, path), h("td", { class: "before" }, valueText(before)), h("td", { class: "arrow" }, "→"), h("td", { class: "after" }, valueText(after))))));
}

// ---- the overview -----------------------------------------------------------------------

function renderOverview(overview) {
  crumbs.replaceChildren();
  if (!overview.controllers.length) {
    return [shadowSummary(), h("p", { class: "muted" }, "No controller is running yet.")];
  }
  return [shadowSummary(), ...overview.controllers.map((c) => {
    const rows = c.objects.map((o) => h("tr", { class: o.deleting ? "deleting" : null, "data-object": qualified(o.namespace, o.name) },
      h("td", null, h("a", { class: "object", href: objectHref(c.name, o.namespace, o.name) },
        o.namespace ? h("span", { class: "muted" }, o.namespace + "/") : null, o.name),
        o.deleting ? h("span", { class: "tag" }, "deleting") : null, shadowMark(c.kind, o.namespace, o.name)),
      h("td", null, readyBadge(o.ready)),
      h("td", null, healthBadge(o.health)),
      h("td", null, when(o.lastReconcile), " ", endedBadge(o.lastEnded))));
    const table = rows.length
      ? h("table", { class: "objects" },
        h("thead", null, h("tr", null, h("th", null, "Name"), h("th", null, "Ready"), h("th", null, "Health"), h("th", null, "Last reconcile"))),
        h("tbody", null, rows))
      : h("p", { class: "muted" }, "No " + c.kind + " yet.");
    return h("section", { class: "card controller", "data-controller": c.name },
      h("h2", null, c.kind, h("span", { class: "sub" }, c.apiVersion + " · controller " + c.name + " · " + c.objects.length + " objects")),
      table);
  })];
}

// ---- one object -------------------------------------------------------------------------

function renderDetail(d) {
  const s = d.summary;
  crumbs.replaceChildren(h("a", { href: "#" }, "all objects"), " / ", d.kind + " " + qualified(s.namespace, s.name));
  const head = h("section", { class: "card head" },
    h("h1", null, h("span", { class: "kind" }, d.kind), qualified(s.namespace, s.name), s.deleting ? h("span", { class: "tag" }, "deleting") : null),
    h("dl", { class: "facts" },
      h("dt", null, "Ready"), h("dd", null, readyBadge(s.ready), s.ready && s.ready.message ? h("span", { class: "message" }, s.ready.message) : null),
      h("dt", null, "Health"), h("dd", null, healthBadge(s.health)),
      s.reconciled ? [h("dt", null, "Reconciled"), h("dd", null, readyBadge(s.reconciled), s.reconciled.message ? h("span", { class: "message" }, s.reconciled.message) : null)] : null,
      h("dt", null, "Generation"), h("dd", null, String(s.generation ?? "—"), h("span", { class: "message" }, "observed " + (s.observedGeneration ?? "—"))),
      h("dt", null, "Controller"), h("dd", null, d.controller + " (" + d.apiVersion + ")")));
  const problems = d.problems && d.problems.length
    ? h("section", { class: "card problems" }, h("h2", null, "Problems"), h("ul", null, d.problems.map((p) => h("li", null, p))))
    : null;
  return [head, problems, shadowWrites(d.kind, s.namespace, s.name), h("div", { class: "columns" },
    h("div", null, section("Children", renderTree(d.tree)), section("Events", renderEvents(d.events))),
    h("div", null, section("Reconciles", renderHistory(d.history, d.skipped))))];
}

function renderTree(root) {
  const node = (n, parentNamespace) => h("li", null,
    h("div", { class: "node health-" + n.health.status, title: n.health.reason + (n.health.message ? ": " + n.health.message : "") },
      h("span", { class: "kind" }, n.kind),
      h("span", { class: "name" }, n.namespace && n.namespace !== parentNamespace ? n.namespace + "/" + n.name : n.name),
      h("span", { class: "status" }, n.health.status),
      n.health.message ? h("span", { class: "message" }, n.health.message) : null),
    n.children.length || n.moreChildren
      ? h("ul", null, n.children.map((c) => node(c, n.namespace)), n.moreChildren ? h("li", { class: "muted" }, "… and " + n.moreChildren + " more") : null)
      : null);
  return h("ul", { class: "tree" }, node(root, root.namespace));
}

function renderEvents(events) {
  if (!events.length) return h("p", { class: "muted" }, "No events.");
  return h("table", { class: "events" },
    h("thead", null, h("tr", null, h("th", null, "Type"), h("th", null, "Reason"), h("th", null, "Message"), h("th", null, "Count"), h("th", null, "Last seen"))),
    h("tbody", null, events.map((e) => h("tr", { class: "event-" + e.type },
      h("td", null, e.type), h("td", null, e.reason), h("td", { class: "wrap" }, e.message), h("td", null, String(e.count)), h("td", { class: "nowrap" }, when(e.lastSeen))))));
}

// Which reconciles' reads are unfolded, by start time, across re-renders.
const openReads = new Set();

function renderHistory(history, skipped) {
  const notes = skipped ? h("p", { class: "muted" }, skipped + " more skipped: nothing they would read had changed.") : null;
  if (!history.length) return [notes, h("p", { class: "muted" }, "No reconcile recorded yet.")];
  return [notes, h("ol", { class: "timeline" }, history.slice().reverse().map(renderReconcile))];
}

function renderReconcile(r) {
  const failed = r.ended.type === "failed";
  const counts = {};
  for (const c of r.children) counts[c.action] = (counts[c.action] || 0) + 1;
  const changed = r.children.filter((c) => c.action !== "unchanged");
  const reads = h("details", { open: openReads.has(r.started), ontoggle: (e) => (e.target.open ? openReads.add(r.started) : openReads.delete(r.started)) },
    h("summary", null, r.reads.length + (r.moreReads ? "+" + r.moreReads : "") + " reads"),
    h("ul", { class: "reads" }, r.reads.map((x) => h("li", null, x.call === "get" ? "get " : "list ", shortKind(x.kind), " ",
      x.call === "get" ? [qualified(x.namespace, x.name || ""), x.resourceVersion ? " @" + x.resourceVersion : " (not found)"] : [x.namespace ? "in " + x.namespace : "everywhere", " → " + x.count]))));
  return h("li", { class: "reconcile " + (failed ? "failed" : "ok") },
    h("div", { class: "line" },
      clock(r.started), h("span", { class: "took" }, "took " + seconds(r.tookMs / 1000)),
      endedBadge(r.ended),
      h("span", { class: "gen muted" }, "generation " + (r.generation ?? "—"))),
    h("div", { class: "triggers" }, r.triggers.map((t) => h("span", { class: "chip" }, triggerText(t))), r.moreTriggers ? h("span", { class: "muted" }, "+" + r.moreTriggers) : null),
    failed ? h("div", { class: "failure" }, h("p", null, r.ended.message), r.ended.codeFrame ? h("pre", { class: "frame" }, r.ended.codeFrame) : null) : null,
    r.children.length
      ? h("div", { class: "children" },
        h("p", { class: "counts" }, Object.entries(counts).map(([action, n]) => h("span", { class: "action action-" + action }, n + " " + action))),
        changed.length ? h("ul", null, changed.map((c) => h("li", null, h("span", { class: "action action-" + c.action }, c.action), " " + shortKind(c.kind) + " " + qualified(c.namespace, c.name)))) : null,
        r.moreChildren ? h("p", { class: "muted" }, "+" + r.moreChildren + " more children") : null)
      : null,
    r.status.length ? diffTable(r.status.map((f) => ({ ...f, path: "status." + f.path }))) : null,
    r.events.length ? h("ul", { class: "notes" }, r.events.map((e) => h("li", { class: "event-" + e.type }, h("b", null, e.reason), " " + e.message))) : null,
    r.reads.length ? reads : null);
}

// ---- loading ----------------------------------------------------------------------------

let view = route();

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message || response.status + " " + response.statusText);
  return body;
}

function show(nodes) {
  main.replaceChildren(...[nodes].flat().filter(Boolean));
  paintShadow();
}

async function load() {
  const shown = view;
  try {
    const nodes = shown.view === "object"
      ? renderDetail(await getJSON("api/object?" + objectQuery(shown.controller, shown.namespace, shown.name)))
      : renderOverview(await getJSON("api/objects"));
    // The view may have changed while this was loading.
    if (shown === view) show(nodes);
  } catch (e) {
    if (shown === view) show([h("p", { class: "card problems" }, String(e.message || e)), shown.view === "object" ? h("p", null, h("a", { href: "#" }, "back to all objects")) : null]);
  }
}

// Loads asked for while one runs become one more load after it: a burst of changes costs
// at most two requests.
let loading = false;
let again = false;
async function refresh() {
  if (loading) {
    again = true;
    return;
  }
  loading = true;
  try {
    await load();
  } finally {
    loading = false;
    if (again) {
      again = false;
      refresh();
    }
  }
}

window.addEventListener("hashchange", () => {
  view = route();
  window.scrollTo(0, 0);
  refresh();
});

// ---- live -------------------------------------------------------------------------------

function connect() {
  const stream = new EventSource("api/stream");
  stream.addEventListener("open", () => {
    live.textContent = "live";
    live.className = "live on";
    // Changes may have been missed while disconnected.
    refresh();
  });
  stream.addEventListener("error", () => {
    live.textContent = "reconnecting…";
    live.className = "live off";
  });
  stream.addEventListener("changed", (e) => {
    let c;
    try {
      c = JSON.parse(e.data);
    } catch {
      return;
    }
    const mine = view.view === "overview" ||
      (c.controller === view.controller && (c.namespace || "") === view.namespace && c.name === view.name);
    if (mine) refresh();
  });
  // The server dropped some changes for this page: read everything shown again.
  stream.addEventListener("lagged", () => refresh());
}

refresh();
connect();
startShadow();
setInterval(() => {
  for (const t of document.querySelectorAll("time.ago")) t.textContent = ago(new Date(t.getAttribute("datetime")));
}, 5000);
