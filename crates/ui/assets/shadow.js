// What a shadow would write (`ctop run --shadow`: a new version of the script runs against the
// live cluster's objects, every write going to an in-process copy). The page asks
// api/shadow once at load: anywhere else it is a 404 and nothing here shows. Under a shadow
// a banner on every view names the live cluster nothing is written to and whether the
// shadow has converged; the overview gets the report's summary and, on each object with
// would-be writes, their count; an object's view lists them (changes field by field) and
// the events it would record. The report is asked again every 2 s; reconciles still come
// through api/stream.
//
// Loaded before app.js, whose helpers (h, diffTable, qualified, seconds) it calls once the
// page runs. app.js places the empty parts (shadowSummary, shadowMark, shadowWrites) in its
// views, has paintShadow fill them each time it shows one, and calls startShadow once.
// Every value is text, as in app.js.
"use strict";

const SHADOW_EVERY_MS = 2000;

// The last report; null while there is none (not asked yet, or no shadow).
let shadowReport = null;
// The report without what changes on every ask (quietMs): the views are painted again only
// when it changes.
let shadowShown = "";
// Why the last ask failed, or null.
let shadowError = null;

// An owner as the report names it (kind without version) and as the views know objects.
const shadowOwnerKey = (kind, namespace, name) => kind + " " + qualified(namespace || "", name);

// ---- the places app.js leaves for it ------------------------------------------------------

// The overview's "Would write" card.
function shadowSummary() {
  return h("section", { class: "card shadow-summary", hidden: true });
}

// In an overview row: how many writes the shadow would make for the object.
function shadowMark(kind, namespace, name) {
  return h("span", { class: "tag shadow-mark", hidden: true, "data-owner": shadowOwnerKey(kind, namespace, name) });
}

// An object's "Would write" section.
function shadowWrites(kind, namespace, name) {
  return h("section", { class: "card shadow-writes", hidden: true, "data-owner": shadowOwnerKey(kind, namespace, name) });
}

// ---- painting -------------------------------------------------------------------------------

const shadowState = (r) => (r.converged ? "converged" : "converging…");

function paintShadowBanner() {
  const banner = document.getElementById("shadow");
  const r = shadowReport;
  if (!r) return;
  banner.hidden = false;
  banner.replaceChildren(...[
    h("span", { class: "shadow-what" }, "Shadow of ", h("code", { class: "shadow-live" }, r.live), ": nothing is written to it"),
    h("span", { class: "shadow-state " + (r.converged ? "converged" : "converging"), title: "quiet for " + seconds(r.quietMs / 1000) }, shadowState(r)),
    h("span", { class: "shadow-requests" }, r.requests + " requests to the copy"),
    r.dropped ? h("span", { class: "shadow-dropped" }, r.dropped + " writes dropped from the log: the report is incomplete") : null,
    shadowError ? h("span", { class: "shadow-dropped" }, "the report could not be read again: " + shadowError) : null,
  ].filter(Boolean));
}

// Fills the places of the view shown from the last report.
function paintShadow() {
  const r = shadowReport;
  if (!r) return;
  const owners = new Map(r.owners.map((o) => [shadowOwnerKey(o.owner.kind, o.owner.namespace, o.owner.name), o]));
  for (const el of main.querySelectorAll(".shadow-summary")) {
    el.hidden = false;
    el.replaceChildren(
      h("h2", null, "Would write", h("span", { class: "sub" }, r.converged ? "what this version would do to the live cluster" : "so far: the shadow is converging…")),
      h("ul", { class: "shadow-lines" }, r.summary.map((line) => h("li", null, line))));
  }
  for (const el of main.querySelectorAll(".shadow-mark")) {
    const o = owners.get(el.dataset.owner);
    const writes = (o && o.writes) || [];
    const events = (o && o.events) || [];
    el.hidden = !writes.length && !events.length;
    el.textContent = writes.length ? "would write " + writes.length : "would record " + events.length + (events.length === 1 ? " event" : " events");
    el.title = writes.map(writeText).join("\n");
  }
  for (const el of main.querySelectorAll(".shadow-writes")) {
    el.hidden = false;
    el.replaceChildren(...shadowObject(r, owners.get(el.dataset.owner)).flat().filter(Boolean));
  }
}

// "delete v1/Service default/shop".
const writeText = (w) => w.action + " " + w.kind + " " + qualified(w.namespace || "", w.name);

// The action's colour, as the reconcile timeline's children.
const SHADOW_ACTIONS = { create: "created", change: "configured", delete: "deleted" };

function shadowObject(r, o) {
  const title = h("h2", null, "Would write", r.converged ? null : h("span", { class: "sub" }, "so far: the shadow is converging…"));
  const writes = (o && o.writes) || [];
  const events = (o && o.events) || [];
  if (!writes.length && !events.length) return [title, h("p", { class: "muted shadow-nothing" }, r.converged ? "nothing" : "nothing yet")];
  return [title,
    writes.length
      ? h("ul", { class: "shadow-list" }, writes.map((w) => h("li", { class: "would-write" },
        h("div", { class: "what" }, h("span", { class: "action action-" + (SHADOW_ACTIONS[w.action] || "other") }, w.action),
          " " + w.kind + " " + qualified(w.namespace || "", w.name)),
        w.fields && w.fields.length ? diffTable(w.fields) : null)))
      : h("p", { class: "muted" }, "no object to write"),
    events.length
      ? [h("h3", null, "Events it would record"),
        h("ul", { class: "notes" }, events.map((e) => h("li", { class: "event-" + e.type }, h("b", null, e.reason), " " + e.message)))]
      : null];
}

// ---- asking -------------------------------------------------------------------------------

function takeShadow(r) {
  shadowReport = r;
  shadowError = null;
  const shown = JSON.stringify({ ...r, quietMs: 0 });
  if (shown !== shadowShown) {
    shadowShown = shown;
    paintShadow();
  }
  paintShadowBanner();
}

// Asks once; a shadow's report (200) starts the banner and the asking every 2 s.
async function startShadow() {
  let response;
  try {
    response = await fetch("api/shadow", { headers: { Accept: "application/json" } });
  } catch {
    return;
  }
  let report;
  try {
    // Read even a 404's body: a response left unread is cut when the page goes.
    const body = await response.text();
    if (response.status !== 200) return;
    report = JSON.parse(body);
  } catch {
    return;
  }
  takeShadow(report);
  setTimeout(pollShadow, SHADOW_EVERY_MS);
}

async function pollShadow() {
  try {
    takeShadow(await getJSON("api/shadow"));
  } catch (e) {
    shadowError = String(e.message || e);
    paintShadowBanner();
  }
  setTimeout(pollShadow, SHADOW_EVERY_MS);
}
