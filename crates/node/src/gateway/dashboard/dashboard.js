// The coopcache dashboard: polls v1/status once a second and draws what it
// says. The status holds counters since the node started, so rates are the
// difference between two polls; the last five minutes of them are kept
// here, in the page, and are lost when it reloads.
"use strict";

const POLL_MS = 1000;
const WINDOW_S = 300;
const LEVELS = ["local", "manager", "peer", "origin"];
const COLOURS = { local: "#2a7", manager: "#27c", peer: "#e90", origin: "#c33" };
const COUNTERS = ["integrity_failures", "protocol_violations", "peer_errors", "timeouts"];

let previous = null; // { t, status } of the last poll
const samples = []; // { t, reads: { level: per s }, origin: bytes per s }

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(Math.round(n))) + " " + units[i];
}

function el(id) { return document.getElementById(id); }

function showMembers(members) {
  const rows = members.map((m, i) => {
    const tr = document.createElement("tr");
    const rtt = i === 0 ? "this node" : m.rtt_us == null ? "not measured" : (m.rtt_us / 1000).toFixed(2) + " ms";
    // As `coopcache status --cluster` shows it: during a rolling upgrade,
    // which members run which release (protocol 14 names none).
    const release = (m.release ?? "before 0.2") + "/" + (m.protocol ?? "-");
    const mem = m.memory;
    const memory = mem
      ? [bytes(mem.cached_bytes), bytes(mem.free_bytes), bytes(mem.capacity_bytes), mem.idle ? "idle" : "busy"]
      : ["not heard yet", "", "", ""];
    for (const text of [m.name, m.listen, release, rtt, ...memory]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    tr.dataset.release = release;
    if (mem) {
      tr.dataset.cached = String(mem.cached_bytes);
      tr.dataset.capacity = String(mem.capacity_bytes);
    }
    return tr;
  });
  const table = el("members");
  table.tBodies[0].replaceChildren(...rows);
  table.dataset.members = String(members.length);
}

function showMemory(s) {
  const used = el("memory-used");
  used.style.width = Math.min(100, (100 * s.cached_bytes) / Math.max(1, s.budget_bytes)) + "%";
  used.dataset.used = String(s.cached_bytes);
  used.dataset.budget = String(s.budget_bytes);
  const pinned = s.max_pinned_bytes > 0
    ? `; ${bytes(s.pinned_bytes)} of a ${bytes(s.max_pinned_bytes)} share pinned (${s.pinned_blocks} blocks)`
    : "";
  el("memory-text").textContent =
    `${bytes(s.cached_bytes)} of ${bytes(s.budget_bytes)} cached (${s.cached_blocks} blocks)${pinned}`;
}

function showCounters(s) {
  for (const name of COUNTERS) {
    const box = el(name);
    box.querySelector(".value").textContent = String(s[name]);
    box.classList.toggle("alarm", s[name] > 0);
  }
}

// A node restarted under the page starts its counters again from zero: a
// negative difference is that, not negative reads.
function rate(now, before, dt) { return Math.max(0, now - before) / dt; }

function record(t, s) {
  if (previous) {
    const dt = t - previous.t;
    const reads = {};
    for (const l of LEVELS) reads[l] = rate(s.reads[l] || 0, previous.status.reads[l] || 0, dt);
    samples.push({ t, reads, origin: rate(s.origin_bytes, previous.status.origin_bytes, dt) });
    while (samples.length && samples[0].t < t - WINDOW_S) samples.shift();
  }
  previous = { t, status: s };
}

// Draws `series` ([{ colour, values }], one value per sample) ending at
// `now`, scaled to the largest value. The time axis spans what the page
// has seen, at least a minute and at most WINDOW_S, so a page opened a
// moment ago draws lines rather than a sliver at the right edge.
function draw(canvas, series, now, label) {
  const span = Math.min(WINDOW_S, Math.max(60, samples.length ? now - samples[0].t : 0));
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 70, bottom = 20;
  g.clearRect(0, 0, w, h);
  const max = Math.max(1e-9, ...series.flatMap((s) => s.values));
  g.fillStyle = "#666";
  g.font = "12px sans-serif";
  g.fillText(label(max), 4, 14);
  g.fillText("0", 4, h - bottom);
  g.fillText(span >= 120 ? `${Math.round(span / 60)} min ago` : `${Math.round(span)} s ago`, left, h - 4);
  g.fillText("now", w - 26, h - 4);
  g.strokeStyle = "#ccc";
  g.strokeRect(left, 2, w - left - 2, h - bottom - 4);
  const x = (t) => left + ((t - (now - span)) / span) * (w - left - 2);
  const y = (v) => h - bottom - 2 - (v / max) * (h - bottom - 8);
  g.lineWidth = 2;
  for (const s of series) {
    g.strokeStyle = s.colour;
    g.beginPath();
    samples.forEach((p, i) => (i ? g.lineTo : g.moveTo).call(g, x(p.t), y(s.values[i])));
    g.stroke();
  }
}

function showCharts(now) {
  const reads = LEVELS.map((l) => ({ colour: COLOURS[l], values: samples.map((p) => p.reads[l]) }));
  const origin = [{ colour: COLOURS.origin, values: samples.map((p) => p.origin) }];
  draw(el("reads"), reads, now, (m) => m.toFixed(1) + "/s");
  draw(el("origin"), origin, now, (m) => bytes(m) + "/s");
  // What is drawn, as numbers, for tests and for anyone scripting the page:
  // reads summed over levels, origin bytes as they are.
  const totals = samples.map((p) => LEVELS.reduce((sum, l) => sum + p.reads[l], 0));
  for (const [id, values] of [["reads", totals], ["origin", samples.map((p) => p.origin)]]) {
    const round = (v) => String(Math.round(v * 100) / 100);
    el(id).dataset.points = String(values.length);
    el(id).dataset.last = round(values.length ? values[values.length - 1] : 0);
    el(id).dataset.max = round(Math.max(0, ...values));
  }
}

function showLegend() {
  el("reads-legend").replaceChildren(...LEVELS.map((l) => {
    const span = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = COLOURS[l];
    span.append(swatch, l);
    return span;
  }));
}

function show(t, s) {
  el("node").textContent = s.name;
  el("summary").textContent =
    `${s.algorithm}, ${s.policy} replacement, ${s.members.length} member${s.members.length === 1 ? "" : "s"}`;
  showMembers(s.members);
  showMemory(s);
  showCounters(s);
  record(t, s);
  showCharts(t);
}

async function poll() {
  try {
    const r = await fetch("v1/status", { cache: "no-store" });
    if (!r.ok) throw new Error(`v1/status answered ${r.status}`);
    show(performance.now() / 1000, await r.json());
    el("error").hidden = true;
  } catch (e) {
    // Keep the last picture and say why it is not moving.
    el("error").textContent = `not updating: ${e.message}`;
    el("error").hidden = false;
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// ---- warm-up, pins and eviction -------------------------------------

/// The gateway's URL for `verb` on `path`, each segment encoded.
function opUrl(verb, path) {
  const clean = path.replace(/^\/+|\/+$/g, "");
  return clean ? `v1/${verb}/${clean.split("/").map(encodeURIComponent).join("/")}` : `v1/${verb}`;
}

function describe(verb, p) {
  const done = { warm: "warmed", pin: "pinned", evict: "evicted" }[verb];
  const of = p.listed ? ` of ${p.listed_files}` : "";
  const size = verb === "evict" ? `${bytes(p.bytes)} held here` : bytes(p.bytes);
  let text = `${p.done ? done : verb + "ing"} ${p.files}${of} files, ${size}`;
  if (p.failed > 0) text += `; ${p.failed} failed (${p.first_error})`;
  if (p.error) text += `; stopped: ${p.error}`;
  return text;
}

async function runOp(button) {
  const { verb, method } = button.dataset;
  const path = el("op-path").value.trim();
  const out = el("op-progress");
  out.dataset.done = "false";
  out.classList.remove("alarm");
  if (!path.replace(/\//g, "") && verb !== "warm") {
    out.textContent = "name a file or a directory first";
    out.classList.add("alarm");
    return;
  }
  try {
    const r = await fetch(opUrl(verb, path), { method, cache: "no-store" });
    if (!r.ok) throw new Error(`${r.status}: ${(await r.text()).trim()}`);
    if (method === "DELETE") {
      const u = await r.json();
      out.textContent = `unpinned ${u.files} files, ${bytes(u.bytes)}`;
      out.dataset.files = String(u.files);
    } else {
      // One JSON object a line, the last one done.
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        let end;
        while ((end = pending.indexOf("\n")) >= 0) {
          const p = JSON.parse(pending.slice(0, end));
          pending = pending.slice(end + 1);
          out.textContent = describe(verb, p);
          out.dataset.files = String(p.files);
          if (p.error || p.failed > 0) out.classList.add("alarm");
        }
      }
    }
  } catch (e) {
    out.textContent = `${verb}: ${e.message}`;
    out.classList.add("alarm");
  } finally {
    out.dataset.done = "true";
    showPins();
  }
}

async function showPins() {
  try {
    const r = await fetch("v1/pins", { cache: "no-store" });
    if (!r.ok) return;
    const pins = await r.json();
    const rows = pins.map(f => {
      const tr = document.createElement("tr");
      for (const text of [f.path, bytes(f.bytes)]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    });
    el("pins").tBodies[0].replaceChildren(...rows);
    el("pins").dataset.pins = String(pins.length);
  } catch (e) {
    // The status poll says why the node does not answer.
  }
}

for (const button of document.querySelectorAll("#ops button")) {
  button.addEventListener("click", () => runOp(button));
}

showLegend();
showPins();
poll();
