// minik dashboard: the page. No framework and no build step: one file, plain DOM.
// The server sends a snapshot, then one patch per batch (every 100 ms at most) over SSE; the page
// merges it into `state` and redraws the visible view once per animation frame.
"use strict";

const state = {
  tables: { pods: {}, nodes: {}, services: {}, slices: {}, deployments: {}, replicasets: {}, journeys: {} },
  events: [],
  samples: {},
  view: "cluster",
  selected: null, // uid of the pod whose journey is shown
  dirty: true,
  changedPods: new Set(), // pod keys changed since the cluster view was last drawn
  rebuild: true, // redraw the lanes from scratch (snapshot, nodes or filter changed)
};
const cards = new Map(); // pod key → its card element, updated in place
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
const ICONS = { Pending: "○", ContainerCreating: "⚙", Running: "▶", Ready: "✔", Terminating: "■",
  Succeeded: "✓", Failed: "✗", CrashLoopBackOff: "↻" };

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// kubectl's AGE: seconds below 2 minutes, then minutes and seconds, minutes, hours (docs/kubernetes-rules.md#columns).
function age(ms) {
  if (ms == null) return "";
  const s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 120) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 10) return m + "m" + (s % 60) + "s";
  if (m < 180) return m + "m";
  const h = Math.floor(m / 60);
  return h < 48 ? h + "h" : Math.floor(h / 24) + "d";
}

function apply(message) {
  if (message.snapshot) {
    for (const name of Object.keys(state.tables)) state.tables[name] = {};
    state.events = [];
    state.samples = {};
    state.rebuild = true;
  }
  for (const [name, change] of Object.entries(message.tables || {})) {
    const table = state.tables[name] || (state.tables[name] = {});
    for (const [key, value] of Object.entries(change.upsert || {})) table[key] = value;
    for (const key of change.remove || []) delete table[key];
    if (name === "pods") for (const key of [...Object.keys(change.upsert || {}), ...(change.remove || [])]) state.changedPods.add(key);
    if (name === "nodes") state.rebuild = true;
  }
  for (const event of message.events || []) state.events.push(event);
  if (state.events.length > 500) state.events.splice(0, state.events.length - 500);
  for (const sample of message.samples || []) (state.samples[sample.rs] ||= []).push(sample);
  window.__minik.patches += 1;
  schedule();
}

// At most one redraw per 50 ms, however many patches arrive (timers, unlike animation frames,
// also run in a background tab, so the page is current when it is shown again).
function schedule() {
  if (state.dirty) return;
  state.dirty = true;
  setTimeout(render, 50);
}

function connect() {
  const source = new EventSource("/updates");
  source.onopen = () => { $("connection").dataset.state = "live"; $("connection").textContent = "live"; };
  source.onmessage = (event) => apply(JSON.parse(event.data));
  source.onerror = () => { $("connection").dataset.state = "lost"; $("connection").textContent = "reconnecting…"; };
}

const inNamespace = (object) => !$("namespace").value || object.ns === $("namespace").value;

function render() {
  state.dirty = false;
  renderNamespaces();
  if (state.view === "cluster") renderCluster();
  if (state.view === "workloads") renderWorkloads();
  if (state.view === "journey") renderJourney();
  if (state.view === "events") renderEvents();
}

function renderNamespaces() {
  const select = $("namespace");
  const names = new Set(Object.values(state.tables.pods).map((p) => p.ns));
  for (const s of Object.values(state.tables.services)) names.add(s.ns);
  for (const d of Object.values(state.tables.deployments)) names.add(d.ns);
  const have = new Set([...select.options].map((o) => o.value));
  for (const name of [...names].sort()) {
    if (!have.has(name)) select.add(new Option(name, name));
  }
}

function cardHtml(pod) {
  const restarts = pod.restarts ? `↻ ${pod.restarts}` : "";
  return `<div class="title">${esc(pod.name)}</div>
    <div class="state">${ICONS[pod.state] || "?"} ${esc(pod.state)}</div>
    <div class="meta"><span>${esc(pod.ready)}</span><span>${restarts}</span><span class="age" data-created="${pod.created ?? ""}">${age(pod.created)}</span>
    <button class="delete" data-action="delete" data-pod="${esc(pod.key)}" title="Delete this pod">Delete…</button></div>`;
}

// Updates one card in place (or creates it) and puts it in its node's lane, in name order.
function placeCard(pod) {
  let card = cards.get(pod.key);
  if (!card) {
    card = document.createElement("div");
    cards.set(pod.key, card);
  }
  const selected = state.selected && state.selected === pod.uid ? " selected" : "";
  card.className = `pod s-${pod.state}${selected}`;
  card.dataset.pod = pod.key;
  card.dataset.uid = pod.uid || "";
  card.dataset.state = pod.state;
  card.title = `${pod.key} ${pod.ip || ""}`;
  const html = cardHtml(pod);
  if (card.__html !== html) { card.innerHTML = html; card.__html = html; }
  const lane = document.querySelector(`.lane[data-node="${CSS.escape(pod.node || "")}"] .cards`) || laneFor("");
  if (card.parentElement !== lane) lane.insertBefore(card, cardAfter(lane, pod.key));
}

// The first card of a lane (kept in name order) whose key sorts after `key`: a binary search, so
// placing 1,000 new cards costs 1,000 × log 1,000 comparisons, not half a million.
function cardAfter(lane, key) {
  const children = lane.children;
  let low = 0, high = children.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (children[mid].dataset.pod > key) high = mid; else low = mid + 1;
  }
  return children[low] || null;
}

function removeCard(key) {
  cards.get(key)?.remove();
  cards.delete(key);
}

// The lane of pods not yet scheduled, created on first use.
function laneFor(node) {
  let lane = document.querySelector(`.lane[data-node="${CSS.escape(node)}"] .cards`);
  if (!lane) {
    $("lanes").insertAdjacentHTML("afterbegin", `<div class="lane" data-node=""><div class="lane-head"><span class="name">not scheduled</span></div><div class="cards"></div></div>`);
    lane = document.querySelector('.lane[data-node=""] .cards');
  }
  return lane;
}

function renderLanes() {
  cards.clear();
  const nodes = Object.values(state.tables.nodes).sort((a, b) => a.name.localeCompare(b.name));
  $("lanes").innerHTML = nodes.map((node) => {
    const ready = node.ready === "True" ? "✔ Ready" : `✗ ${node.ready === "False" ? "NotReady" : "Unknown"}`;
    const cordoned = node.unschedulable ? `<span class="tag">⊘ cordoned</span>` : "";
    const label = node.unschedulable ? "Uncordon…" : "Cordon…";
    return `<div class="lane" data-node="${esc(node.name)}"><div class="lane-head"><span class="name">${esc(node.name)}</span>
      <span class="tag">${ready}</span>${cordoned}<button data-action="cordon" data-node="${esc(node.name)}">${label}</button></div>
      <div class="cards"></div></div>`;
  }).join("");
  state.changedPods = new Set(Object.keys(state.tables.pods));
}

// Only the cards of pods that changed are touched: 1,000 pods cost 1,000 small updates once, not
// a rebuild of every card per patch.
function renderCluster() {
  if (state.rebuild) { state.rebuild = false; renderLanes(); }
  for (const key of state.changedPods) {
    const pod = state.tables.pods[key];
    if (pod && inNamespace(pod)) placeCard(pod); else removeCard(key);
  }
  state.changedPods.clear();
  const empty = document.querySelector('.lane[data-node=""] .cards');
  if (empty && !empty.children.length) empty.closest(".lane").remove();
  for (const span of document.querySelectorAll("#lanes .age")) {
    const text = age(Number(span.dataset.created) || null);
    if (span.textContent !== text) span.textContent = text;
  }
  renderServices();
}

function renderServices() {
  const slices = Object.values(state.tables.slices);
  const html = Object.values(state.tables.services).filter(inNamespace).map((service) => {
    const endpoints = slices.filter((s) => s.ns === service.ns && s.service === service.name).flatMap((s) => s.endpoints);
    const items = endpoints.map((e) => {
      const [cls, text] = e.ready ? ["ep-ready", "✔ ready"] : e.terminating
        ? ["ep-terminating", e.serving ? "■ terminating, serving" : "■ terminating"]
        : e.serving ? ["ep-serving", "◐ serving"] : ["ep-terminating", "✗ not ready"];
      return `<li class="${cls}" data-endpoint="${esc(e.pod)}">${text} — ${esc(e.pod)} ${esc(e.ip)}</li>`;
    }).join("") || "<li>no endpoints</li>";
    return `<div class="service" data-service="${esc(service.key)}"><b>${esc(service.name)}</b>
      <span class="tag">${esc(service.ns)} · ${esc(service.type)} ${esc(service.clusterIP || "")}</span><ul>${items}</ul></div>`;
  }).join("");
  $("services").innerHTML = html || `<p class="hint">No Services.</p>`;
}

const RS_COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];
const METRICS = [["ready", ""], ["running", "6 3"], ["terminating", "2 3"]];

function chart(sets) {
  const width = 900, height = 180, pad = 28;
  const all = sets.flatMap((rs) => state.samples[rs.key] || []);
  if (!all.length) return `<p class="hint">No samples yet.</p>`;
  const now = Date.now();
  const t0 = Math.max(Math.min(...all.map((s) => s.t)), now - 300000);
  const max = Math.max(1, ...all.map((s) => Math.max(s.running, s.ready, s.terminating)));
  const x = (t) => pad + ((Math.max(t, t0) - t0) / Math.max(1, now - t0)) * (width - 2 * pad);
  const y = (v) => height - pad + 8 - (v / max) * (height - 2 * pad);
  const groups = sets.map((rs, i) => {
    const series = state.samples[rs.key] || [];
    const colour = RS_COLOURS[i % RS_COLOURS.length];
    const lines = METRICS.map(([metric, dash]) => {
      let points = "", last = 0;
      for (const s of series) { points += `${x(s.t)},${y(last)} ${x(s.t)},${y(s[metric])} `; last = s[metric]; }
      points += `${x(now)},${y(last)}`;
      return `<polyline data-metric="${metric}" fill="none" stroke="${colour}" stroke-width="2" stroke-dasharray="${dash}" points="${points}"/>`;
    }).join("");
    return `<g class="series" data-rs="${esc(rs.name)}">${lines}</g>`;
  }).join("");
  const axis = `<text x="2" y="${y(max) + 4}">${max}</text><text x="2" y="${y(0)}">0</text>
    <text x="${pad}" y="${height - 2}">−${Math.round((now - t0) / 1000)}s</text><text x="${width - 40}" y="${height - 2}">now</text>`;
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" role="img" aria-label="pods per ReplicaSet over time">${axis}${groups}</svg>`;
}

function renderWorkloads() {
  const sets = Object.values(state.tables.replicasets);
  const html = Object.values(state.tables.deployments).filter(inNamespace).sort((a, b) => a.key.localeCompare(b.key)).map((d) => {
    const mine = sets.filter((rs) => rs.ns === d.ns && rs.owner === d.name)
      .sort((a, b) => Number(a.revision || 0) - Number(b.revision || 0));
    const cards = mine.map((rs, i) => `<div class="rs" data-rs="${esc(rs.name)}">
        <b style-colour="${i}">■</b> ${esc(rs.name)} · rev ${esc(rs.revision || "?")} · ${rs.ready}/${rs.replicas} ready</div>`).join("");
    const legend = mine.map((rs, i) => `<span data-legend="${i}">■ ${esc(rs.name)}</span>`).join(" ");
    return `<div class="deployment" data-deployment="${esc(d.key)}">
      <div class="deployment-head"><b>${esc(d.name)}</b><span class="tag">${esc(d.ns)}</span>
      <span>${d.ready}/${d.replicas} ready · ${d.updated} up-to-date · ${d.available} available</span>
      <button data-action="scale" data-deployment="${esc(d.key)}" data-replicas="${d.replicas}">Scale…</button></div>
      <div class="replicasets">${cards}</div>${chart(mine)}
      <div class="legend">${legend} — solid: Ready · dashed: Running · dotted: Terminating</div></div>`;
  }).join("");
  $("deployments").innerHTML = html || `<p class="hint">No Deployments.</p>`;
  document.querySelectorAll("[data-legend], [style-colour]").forEach((el) => {
    const i = Number(el.dataset.legend ?? el.getAttribute("style-colour"));
    el.style.color = RS_COLOURS[i % RS_COLOURS.length];
  });
}

function renderJourney() {
  const select = $("journey-pod");
  const journeys = Object.values(state.tables.journeys).filter((j) => !$("namespace").value || j.key.startsWith($("namespace").value + "/"));
  const live = new Set(Object.values(state.tables.pods).map((p) => p.uid));
  const options = journeys.sort((a, b) => a.key.localeCompare(b.key))
    .map((j) => `<option value="${esc(j.uid)}">${esc(j.key)}${live.has(j.uid) ? "" : " (gone)"}</option>`).join("");
  if (select.dataset.options !== options) {
    select.innerHTML = options;
    select.dataset.options = options;
  }
  if (!state.selected && journeys.length) state.selected = journeys[0].uid;
  select.value = state.selected || "";
  const journey = state.tables.journeys[state.selected];
  if (!journey) { $("journey").innerHTML = ""; return; }
  const t0 = journey.steps[0].at;
  const rows = journey.steps.map((s) => `<li class="src-${esc(s.source)}" data-step="${esc(s.step)}" data-at="${s.at}">
      <span class="offset">+${(s.at - t0).toLocaleString("en")} ms</span><span class="step">${esc(s.step)}</span>
      <span class="who">${esc(s.who)}</span><span class="detail">${esc(s.detail)}</span></li>`).join("");
  $("journey").innerHTML = `<h2 data-journey="${esc(journey.key)}">${esc(journey.key)}</h2>
    <p class="hint">◉ seen on the pod watch · ✉ an Event (its eventTime) · ⇄ an EndpointSlice change</p><ol>${rows}</ol>`;
}

function renderEvents() {
  const filter = $("event-filter").value.toLowerCase();
  const rows = state.events.filter((e) => !$("namespace").value || e.ns === $("namespace").value)
    .filter((e) => !filter || `${e.reason} ${e.object} ${e.message} ${e.source}`.toLowerCase().includes(filter))
    .slice(-300).reverse()
    .map((e) => `<tr class="${esc(e.type)}" data-reason="${esc(e.reason)}"><td>${e.time ? new Date(e.time).toLocaleTimeString() : ""}</td>
      <td>${e.type === "Warning" ? "⚠ " : ""}${esc(e.type)}</td><td>${esc(e.reason)}</td><td>${esc(e.object)}</td>
      <td>${esc(e.source)}</td><td>${esc(e.message)}</td></tr>`).join("");
  $("events").tBodies[0].innerHTML = rows;
}

async function post(path, body) {
  const answer = await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify(body),
  });
  if (!answer.ok) {
    const status = await answer.json().catch(() => ({}));
    throw new Error(status.message || `HTTP ${answer.status}`);
  }
}

// Every action is explicit: a dialog names the object and what will happen; nothing is sent until Confirm.
function confirmAction({ title, text, fields, send }) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-error").textContent = "";
  $("confirm-fields").innerHTML = fields.map((f) =>
    `<label>${esc(f.label)} <input name="${esc(f.name)}" id="field-${esc(f.name)}" type="${f.type || "number"}" value="${esc(f.value)}" min="0"></label>`).join("");
  $("confirm-ok").onclick = async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(fields.map((f) => [f.name, $("field-" + f.name).value]));
    try { await send(values); dialog.close(); } catch (error) { $("confirm-error").textContent = error.message; }
  };
  $("confirm-cancel").onclick = (event) => { event.preventDefault(); dialog.close(); };
  dialog.showModal();
}

function onAction(button) {
  const action = button.dataset.action;
  if (action === "delete") {
    const [ns, name] = button.dataset.pod.split("/");
    confirmAction({ title: `Delete pod ${name}?`, text: `The pod ${ns}/${name} gets a deletionTimestamp; the kubelet runs preStop, then SIGTERM, and SIGKILL after the grace period.`,
      fields: [{ name: "grace", label: "Grace period (s, empty: the pod's own)", value: "" }],
      send: (v) => post(`/api/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/delete`,
        { confirm: name, gracePeriodSeconds: v.grace === "" ? null : Number(v.grace) }) });
  } else if (action === "scale") {
    const [ns, name] = button.dataset.deployment.split("/");
    confirmAction({ title: `Scale Deployment ${name}?`, text: `Sets spec.replicas of ${ns}/${name}.`,
      fields: [{ name: "replicas", label: "Replicas", value: button.dataset.replicas }],
      send: (v) => post(`/api/deployments/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/scale`, { confirm: name, replicas: Number(v.replicas) }) });
  } else if (action === "cordon") {
    const name = button.dataset.node;
    const node = state.tables.nodes[name] || {};
    const unschedulable = !node.unschedulable;
    confirmAction({ title: `${unschedulable ? "Cordon" : "Uncordon"} node ${name}?`,
      text: unschedulable ? "New pods will not be scheduled there; its pods keep running." : "New pods may be scheduled there again.",
      fields: [], send: () => post(`/api/nodes/${encodeURIComponent(name)}/cordon`, { confirm: name, unschedulable }) });
  }
}

function show(view) {
  if (view === "cluster" && state.view !== "cluster") state.rebuild = true;
  state.view = view;
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("active", b.dataset.view === view));
  document.querySelectorAll(".view").forEach((v) => v.classList.toggle("active", v.id === "view-" + view));
  schedule();
}

window.__minik = { patches: 0, show };
document.addEventListener("DOMContentLoaded", () => {
  // The token has become a cookie: take it out of the address bar and the history.
  if (location.search.includes("token=")) history.replaceState(null, "", "/");
  $("tabs").addEventListener("click", (e) => e.target.dataset.view && show(e.target.dataset.view));
  $("namespace").addEventListener("change", () => { state.rebuild = true; schedule(); });
  $("event-filter").addEventListener("input", schedule);
  $("journey-pod").addEventListener("change", (e) => { state.selected = e.target.value; schedule(); });
  document.body.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-action]");
    if (button) return onAction(button);
    const card = e.target.closest(".pod");
    if (card) { state.selected = card.dataset.uid; state.rebuild = true; show("journey"); }
  });
  state.dirty = false;
  connect();
  setInterval(schedule, 1000); // ages and the chart's time axis
});
