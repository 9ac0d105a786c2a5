// The batonflow dev UI: plain JavaScript over the server's API (no build step). It streams runs with fetch (so that
// the bearer token travels in a header, which EventSource cannot send), each in a block of its own beside the
// others, draws each run's tree from the events' run paths (its earlier segments kept when it resumes, and read
// again with the run's history after a reload: the address names the run), draws the target as a diagram with the
// running node marked, shows the run's state, lists what waits for a person and answers it, and shows the trace as
// a timeline. A run the server kept (``--keep-history``) lists its steps once it ends: the state after each, and a
// fork from any of them into a new run.
"use strict";

const $ = (selector) => document.querySelector(selector);
const COLOURS = ["#0b7285", "#862e9c", "#2b8a3e", "#e67700", "#1864ab", "#c92a2a", "#5f3dc4", "#087f5b"];
const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 3000;  // how often the list of what waits is read again (answers given elsewhere, runs ended)
const MAX_VIEWS = 50;  // the runs whose trees the page keeps
const ui = {
  token: sessionStorage.getItem("batonflow.token") || "",
  streams: [],  // the streams going, the latest last
  views: new Map(),  // a run's checkpoint (or conversation) id -> what the page shows of it
  selected: null,  // the view whose tree, timeline and diagram are shown
  cards: new Map(),  // a pending entry's key -> its card
  dismissed: new Set(JSON.parse(sessionStorage.getItem("batonflow.dismissed") || "[]")),
  structures: new Map(),  // "agents/<name>" or "flows/<id>" -> its structure
  diagram: null,  // { key, nodes: Map(id -> the node's <g>) }
  opening: null,  // the kept step whose state and fork form are being read
};

function colour(name) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.codePointAt(0)) >>> 0;
  return COLOURS[hash % COLOURS.length];
}

// An id as one path segment: "." and ".." quoted too, which URL parsers would otherwise resolve away.
function segment(id) {
  const quoted = encodeURIComponent(id);
  return quoted === "." || quoted === ".." ? quoted.replaceAll(".", "%2E") : quoted;
}

function headers(extra = {}) {
  return ui.token ? { ...extra, Authorization: `Bearer ${ui.token}` } : extra;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "style") Object.assign(node.style, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function shape(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json();
  if (!response.ok) throw new Error(data.error ? data.error.message : response.statusText);
  return data;
}

function status(text, error = false) {
  const line = $("#status");
  line.textContent = text;
  line.className = error ? "note error" : "muted";
}

// A value as a person reads it: a text as it is, anything else as compact JSON, cut at ``limit`` characters.
function brief(value, limit = 160) {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function fields(value, limit = 60) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return brief(value, limit);
  return Object.entries(value).map(([key, item]) => `${key}=${brief(item, limit)}`).join(", ");
}

// What an interrupt waits for, in one bounded line: the calls to approve, or the question asked.
function waitsFor(interrupt) {
  if (interrupt.kind === "approval") {
    return `approval of ${brief(interrupt.info.tasks.map(call).join(", "), 240)}`;
  }
  return `an answer to ${brief(fields(interrupt.info), 240)}`;
}

// -- streaming ------------------------------------------------------------------------------------------------

function parseFrame(block) {
  const frame = { event: "message", id: "", data: "" };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const at = line.indexOf(":");
    const name = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
    if (name === "data") frame.data += value;
    else if (name === "event" || name === "id") frame[name] = value;
  }
  return frame.data ? { ...frame, data: JSON.parse(frame.data) } : null;
}

// One stream: its own block in the chat, its own controller. Streams go side by side; none stops another. A
// ``body`` of null reads a run's events (GET) rather than starting or resuming one.
async function stream(path, body, title, refused = null) {
  const run = { controller: new AbortController(), bubbles: new Map(), view: null, block: runBlock(title) };
  run.block.stop.addEventListener("click", () => run.controller.abort());
  ui.streams.push(run);
  $("#stop").disabled = false;
  try {
    const response = await fetch(path, {
      method: body === null ? "GET" : "POST",
      headers: headers(body === null ? { Accept: "text/event-stream" } : { "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: body === null ? undefined : JSON.stringify(body),
      signal: run.controller.signal,
    });
    if (!response.ok) {
      const data = await response.json();
      const reason = data.error ? data.error.message : response.statusText;
      runStatus(run, reason, true);
      if (refused) refused(response.status, reason);
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame) onFrame(run, frame);
      }
    }
  } catch (error) {
    const stopped = error.name === "AbortError";
    runStatus(run, stopped ? "stopped: the run was cancelled" : String(error), !stopped);
  } finally {
    ui.streams = ui.streams.filter((other) => other !== run);
    run.block.stop.remove();
    $("#stop").disabled = ui.streams.length === 0;
    if (run.view) run.view.live = false;
    if (run.view === ui.selected) markRunning(null);
    refreshSide();
  }
}

function runBlock(title) {
  const state = element("span", { class: "run-status muted" }, "starting");
  const tokens = element("span", { class: "run-tokens muted" });
  const stop = element("button", { type: "button", class: "run-stop" }, "stop");
  const head = element("div", { class: "run-head" }, element("span", { class: "run-title" }, title), " · ", state, " ", tokens, " ", stop);
  const body = element("div", { class: "run-body" });
  const block = element("div", { class: "run" }, head, body);
  $("#chat").append(block);
  return { block, head, state, tokens, stop, body };
}

// The next segment of a run read from its history: a block of its own (the stop button moved to it), its
// events numbered from 1 again.
function nextSegment(run, head) {
  run.block.stop.remove();
  run.block = runBlock(head.resumed ? `resume of ${head.checkpoint_id || head.session_id}` : "run");
  run.block.stop.addEventListener("click", () => run.controller.abort());
  run.bubbles = new Map();
}

function runStatus(run, text, error = false) {
  run.block.state.textContent = text;
  run.block.state.className = `run-status ${error ? "error" : "muted"}`;
  status(text, error);
}

// -- what a run says ------------------------------------------------------------------------------------------

function scrolled(place) {
  const chat = $("#chat");
  chat.scrollTop = chat.scrollHeight;
  return place;
}

function say(who, text, cls, data, place = $("#chat")) {
  const bubble = element("div", { class: `bubble ${cls}`, style: { "--colour": colour(who) } });
  if (cls === "agent") bubble.append(element("span", { class: "who" }, who));
  const body = element("span", { class: "text" }, text);
  bubble.append(body);
  if (data) bubble.addEventListener("click", () => inspect(data));
  scrolled(place).append(bubble);
  return body;
}

function note(place, text, cls, data, who = "") {
  const line = element("div", { class: `note ${cls}`, style: { "--colour": colour(who) } }, text);
  if (data) line.addEventListener("click", () => inspect(data));
  scrolled(place).append(line);
}

function inspect(data) {
  const pane = $("#inspector");
  pane.className = "";
  pane.textContent = JSON.stringify(data, null, 2);
}

function call(toolCall) {
  const name = toolCall.name ?? toolCall.tool_name;
  let shown = toolCall.arguments;
  try {
    shown = fields(JSON.parse(toolCall.arguments || "{}"));
  } catch (_) { /* arguments that are not JSON, as the model wrote them */ }
  return `${name}(${brief(shown, 200)})`;
}

function onFrame(run, frame) {
  const data = frame.data;
  const place = run.block.body;
  switch (frame.event) {
    case "run":
      if (run.view) nextSegment(run, data);  // a replayed history: each segment in a block of its own
      run.view = viewOf(data);
      run.block.block.addEventListener("click", () => select(run.view));
      run.block.head.prepend(element("strong", {}, data.agent), " ");
      runStatus(run, `running (${data.run_id}${data.resumed ? ", resumed" : ""})`);
      select(run.view);
      markRunning(data.agent);
      break;
    case "message_start":
      if (data.role === "assistant") run.bubbles.set(data.seq, { agent: data.agent, text: null });
      break;
    case "delta": {
      const bubble = run.bubbles.get(data.seq);
      if (!bubble || !data.content) break;
      if (bubble.text === null) bubble.text = say(bubble.agent, "", "agent", null, place);
      bubble.text.textContent += data.content;
      break;
    }
    case "message":
    case "transfer":
    case "interrupt":
    case "action":
    case "error":
      onEvent(run, frame.event, data);
      break;
    case "trace":
      addTrace(run.view, data);
      break;
    case "state":
      if (run.view) run.view.state = data;
      break;
    case "gap":
      note(place, `… ${data.count} event record(s) lost (${data.missing.from} to ${data.missing.to}): ${data.reason}`, "error", data);
      break;
    case "end": {
      const lost = data.end_record === "lost" ? ` (its end record was lost: ${data.reason})` : "";
      runStatus(run, `${data.status}${data.error ? `: ${data.error.type}: ${data.error.message}` : ""}${lost}`, data.status === "failed");
      const usage = data.usage || {};
      const tokens = usage.total_tokens || (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
      run.block.tokens.textContent = `${tokens} tokens`;
      if (run.view) {
        run.view.live = false;
        run.view.steps = null;  // read again: this segment added to them
        if (run.view === ui.selected) {
          showState(run.view);
          showSteps(run.view);
        }
      }
      break;
    }
  }
}

function onEvent(run, kind, event) {
  const place = run.block.body;
  if (run.view) addToTree(run.view, kind, event);
  if (run.view === ui.selected) markRunning(event.agent);
  const message = event.message;
  if (message && message.role === "assistant") {
    const bubble = run.bubbles.get(event.seq);
    if (bubble && bubble.text) bubble.text.parentElement.addEventListener("click", () => inspect(event));
    else if (message.content) say(event.agent, message.content, "agent", event, place);
    for (const toolCall of message.tool_calls || []) {
      if (toolCall.name !== "transfer_to_agent") note(place, `⚙ ${event.agent} calls ${call(toolCall)}`, "", event);
    }
  } else if (kind === "transfer") {
    note(place, `⇢ ${event.agent} transfers to ${event.action.transfer_to}`, "transfer", event, event.agent);
  } else if (message && message.role === "tool") {
    note(place, `← ${message.tool_name}: ${brief(message.content, 240)}`, "", event);
  }
  if (kind === "interrupt") {
    for (const interrupt of event.action.interrupted.interrupts) {
      note(place, `? ${event.agent} waits for ${waitsFor(interrupt)}`, "waits", event);
    }
  }
  if (kind === "error") note(place, `error: ${event.error.type}: ${event.error.message}`, "error", event);
}

// -- a run's view: its tree (every segment), timeline, state --------------------------------------------------

// The view of a run: a resumed run adds to the view of the run it continues, so the tree keeps what came before.
function viewOf(head) {
  const key = head.checkpoint_id || head.session_id || head.run_id;
  const known = ui.views.get(key);
  if (known && head.resumed) {
    known.tree.events.push({ kind: "resume", event: head });
    known.live = true;
    known.runId = head.run_id;
    known.state = null;  // this segment's values come with its end
    return known;
  }
  const view = {
    key, runId: head.run_id, agent: head.agent, session: head.session_id, live: true, visited: new Set(), state: null,
    tree: { name: head.agent, events: [], children: new Map() },
    timeline: element("tbody"),
  };
  ui.views.set(key, view);
  if (ui.views.size > MAX_VIEWS) ui.views.delete(ui.views.keys().next().value);  // the oldest run's
  return view;
}

// The run shown is named in the page's address (``#run=<its latest run id>``): a reload, or the address opened
// elsewhere, reads that run's whole history again (``restore``).
function select(view) {
  ui.selected = view;
  history.replaceState(null, "", `#${new URLSearchParams({ run: view.runId })}`);
  drawTree();
  $("#timeline tbody").replaceWith(view.timeline);
  showDiagram(`agents/${view.agent}`, view.visited);
  showState(view);
  showSteps(view);
}

function addToTree(view, kind, event) {
  let node = view.tree;
  const path = event.run_path.length ? event.run_path : [event.agent];
  for (const [i, name] of path.entries()) {
    if (i === 0 && name === node.name) continue;
    if (!node.children.has(name)) node.children.set(name, { name, events: [], children: new Map() });
    node = node.children.get(name);
  }
  node.events.push({ kind, event });
  view.visited.add(event.agent);
  if (view === ui.selected) drawTree();
}

function summary(kind, event) {
  const message = event.message;
  if (kind === "resume") return `resumed: run ${event.run_id}`;
  if (kind === "transfer") return `transfer → ${event.action.transfer_to}`;
  if (kind === "interrupt") return "interrupt: waits for an answer";
  if (kind === "error") return `error: ${event.error.type}`;
  if (message && message.tool_calls) return `calls ${message.tool_calls.map((c) => c.name).join(", ")}`;
  if (message && message.role === "tool") return `tool ${message.tool_name}`;
  return `${kind}: ${(message && message.content || "").slice(0, 40)}`;
}

function drawNode(node) {
  const item = element("li", {}, element("span", { class: "agent-name", style: { "--colour": colour(node.name) } }, node.name));
  const list = element("ul");
  for (const { kind, event } of node.events) {
    const label = kind === "resume" ? summary(kind, event) : `#${event.seq} ${summary(kind, event)}`;
    list.append(element("li", { class: `event ${kind}`, onclick: () => inspect(event) }, label));
  }
  for (const child of node.children.values()) list.append(drawNode(child));
  item.append(list);
  return item;
}

function drawTree() {
  if (ui.selected) $("#tree").replaceChildren(element("ul", {}, drawNode(ui.selected.tree)));
}

function addTrace(view, event) {
  if (!view || !event.kind.endsWith("_end")) return;
  const tokens = event.metrics ? event.metrics.total_tokens ?? (event.metrics.total || {}).total_tokens : event.usage ? event.usage.total_tokens : "";
  const what = event.kind === "tool_call_end" ? `tool ${event.tool_name}` : event.kind.replace("_end", "");
  const row = element("tr", { onclick: () => inspect(event) },
    element("td", {}, what), element("td", {}, event.agent_name || ""),
    element("td", {}, (event.duration_ms || 0).toFixed(1)), element("td", {}, tokens === undefined ? "" : String(tokens)));
  view.timeline.append(row);
}

// The state panel: a conversation's values (its attributes) after each turn; a run's without a session, its
// session values as its latest segment left them (the server's ``state`` frame); a flow's variables after it ran.
async function showState(view) {
  if (!view.session) {
    if (view.state) drawState(view.state.values, "", view.state.more);
    else drawState(null, view.live ? "the run's values come when it ends or pauses" : "this run holds no values: its agents set none");
    return;
  }
  try {
    const data = await api("GET", `/sessions/${segment(view.session)}`);
    if (ui.selected === view) drawState(data.attributes);
  } catch (error) {
    drawState(null, String(error.message || error));
  }
}

function drawState(values, why = "no values", more = 0) {
  const rows = Object.entries(values || {}).map(([key, value]) =>
    element("tr", {}, element("th", {}, brief(key, 60)), element("td", {}, brief(value, 200))));
  if (more) rows.push(element("tr", {}, element("th", {}, "…"), element("td", { class: "muted" }, `${more} more not shown`)));
  $("#state").replaceChildren(...(rows.length ? [element("table", {}, element("tbody", {}, ...rows))] : [element("p", { class: "muted" }, why)]));
}

// -- a kept run's steps, the state after each, and a fork from one ----------------------------------------------

// The steps of the run the view shows, read once it has ended (a run still going has no record yet); for a run the
// server kept nothing of, the server's reason.
async function showSteps(view) {
  const pane = $("#steps");
  if (view.live) {
    pane.replaceChildren(element("p", { class: "muted" }, "the run's steps come when it ends or pauses"));
    return;
  }
  try {
    view.steps = view.steps || await api("GET", `/runs/${segment(view.runId)}/history`);
  } catch (error) {
    if (ui.selected === view) pane.replaceChildren(element("p", { class: "muted" }, `no steps kept: ${error.message || error}`));
    return;
  }
  if (ui.selected !== view) return;
  const rows = view.steps.steps.map((step) => element("tr", { class: `step ${step.kind}`, "data-index": String(step.index), onclick: () => openStep(view, step) },
    element("td", {}, String(step.index)), element("td", {}, step.kind), element("td", {}, step.agent_name), element("td", {}, brief(step.summary, 80))));
  pane.replaceChildren(element("table", { class: "steps" }, element("tbody", {}, ...rows)), element("div", { id: "fork" }));
}

// One step: the state after it (the messages so far in the inspector, the session values in the state panel) and
// the form that forks a new run from it, with a message added if one is typed.
async function openStep(view, step) {
  for (const row of document.querySelectorAll("#steps tr.step")) row.classList.toggle("chosen", row.dataset.index === String(step.index));
  ui.opening = step;  // the step clicked last: an earlier click's answer that comes after it is dropped
  let shown;
  try {
    shown = await api("GET", `/runs/${segment(view.runId)}/history/${step.index}`);
  } catch (error) {
    status(String(error.message || error), true);
    return;
  }
  if (ui.opening !== step || ui.selected !== view) return;
  inspect(shown.state);
  drawState(shown.state.session_values, "no session values after this step");
  const input = element("input", { "aria-label": `message for a fork after step ${step.index}`, placeholder: "a message to add (optional)" });
  const values = element("input", { "aria-label": `session values for a fork after step ${step.index}`, placeholder: '{"key": "value"} merged (optional)' });
  const fork = () => {
    let merged;
    try {
      merged = JSON.parse(values.value.trim() || "{}");
    } catch (error) {
      status(`the session values are not JSON: ${error}`, true);
      return;
    }
    const text = input.value.trim();
    if (text) say("you", text, "user");
    stream(`/runs/${segment(view.runId)}/fork`, { at: step.index, input: text, session_values: merged, stream: true, trace: true },
      `fork of ${view.key} after step ${step.index}`);
  };
  $("#fork").replaceChildren(element("span", { class: "muted" }, `after step ${step.index}: `), input, values,
    element("button", { type: "button", class: "fork", onclick: fork }, "fork from here"));
}

// -- the diagram ----------------------------------------------------------------------------------------------

// Nodes in columns by the longest way to them from where the graph starts, links that close a loop (found depth
// first) left out of that count and drawn as curves back; an SVG drawn here, so that the page stays offline and
// small, with no diagram library to ship.
function loops(structure) {
  const next = new Map(structure.nodes.map((n) => [n.id, []]));
  for (const link of structure.links) next.get(link.from).push(link);
  const back = new Set();
  const seen = new Map();  // id -> 1 while its links are walked, 2 after
  const walk = (id) => {
    seen.set(id, 1);
    for (const link of next.get(id)) {
      if (seen.get(link.to) === 1) back.add(link);
      else if (!seen.has(link.to)) walk(link.to);
    }
    seen.set(id, 2);
  };
  for (const node of structure.nodes) if (!seen.has(node.id)) walk(node.id);
  return back;
}

function layout(structure, back) {
  const depth = new Map(structure.nodes.map((n) => [n.id, 0]));
  let changed = true;
  for (let round = 0; changed && round < structure.nodes.length; round++) {
    changed = false;
    for (const link of structure.links) {
      if (back.has(link) || depth.get(link.to) > depth.get(link.from)) continue;
      depth.set(link.to, depth.get(link.from) + 1);
      changed = true;
    }
  }
  const rows = new Map();
  const place = new Map();
  for (const node of structure.nodes) {
    const column = depth.get(node.id);
    const row = rows.get(column) || 0;
    rows.set(column, row + 1);
    place.set(node.id, { x: 10 + column * 130, y: 10 + row * 46 });
  }
  return place;
}

function drawDiagram(key, structure, visited) {
  const back = loops(structure);
  const place = layout(structure, back);
  const width = Math.max(...[...place.values()].map((p) => p.x), 0) + 120;
  const height = Math.max(...[...place.values()].map((p) => p.y), 0) + 64;  // room for the curves below
  const svg = shape("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `diagram of ${structure.name}` },
    shape("defs", {}, shape("marker", { id: "arrow", viewBox: "0 0 8 8", refX: "8", refY: "4", markerWidth: "6", markerHeight: "6", orient: "auto" },
      shape("path", { d: "M0,0 L8,4 L0,8 z" }))));
  for (const link of structure.links) {
    const from = place.get(link.from);
    const to = place.get(link.to);
    const curve = back.has(link) || to.x <= from.x || to.x - from.x > 130;  // back, or past a column: below
    const [x1, y1] = curve ? [from.x + 50, from.y + 30] : [from.x + 100, from.y + 15];
    const [x2, y2] = curve ? [to.x + 50, to.y + 30] : [to.x, to.y + 15];
    const d = curve ? `M${x1},${y1} C${x1},${y1 + 30} ${x2},${y2 + 30} ${x2},${y2}` : `M${x1},${y1} L${x2},${y2}`;
    svg.append(shape("path", { class: "link", d, "marker-end": "url(#arrow)" }, shape("title", {}, link.title || `${link.from} → ${link.to}`)));
  }
  const nodes = new Map();
  for (const node of structure.nodes) {
    const { x, y } = place.get(node.id);
    const label = shape("text", { x: x + 50, y: y + 19, "text-anchor": "middle" });
    label.textContent = brief(node.title, 16);
    const group = shape("g", { class: `node ${node.type}`, "data-id": node.id }, shape("rect", { x, y, width: 100, height: 30, rx: node.type === "start" || node.type === "end" ? 15 : 4 }),
      label, shape("title", {}, `${node.title} (${node.type})`));
    if (visited.has(node.id)) group.classList.add("visited");
    nodes.set(node.id, group);
    svg.append(group);
  }
  ui.diagram = { key, nodes };
  const caption = `${structure.kind} ${structure.name}${structure.protocol ? ` · ${structure.protocol}` : ""}${structure.truncated ? " · cut (too many nodes)" : ""}`;
  $("#diagram").replaceChildren(element("p", { class: "muted" }, caption), svg);
}

async function showDiagram(key, visited = new Set()) {
  try {
    if (!ui.structures.has(key)) ui.structures.set(key, await api("GET", `/${key.split("/")[0]}/${segment(key.slice(key.indexOf("/") + 1))}/structure`));
    drawDiagram(key, ui.structures.get(key), visited);
    if (ui.selected && ui.selected.live && key === `agents/${ui.selected.agent}`) markRunning(ui.selected.running);
  } catch (error) {
    $("#diagram").replaceChildren(element("p", { class: "note error" }, String(error.message || error)));
  }
}

// The node that runs now marked ``running`` (none when ``id`` is null), every node the run went through ``visited``.
function markRunning(id) {
  if (ui.selected) ui.selected.running = id;
  if (!ui.diagram) return;
  for (const [nodeId, group] of ui.diagram.nodes) {
    group.classList.toggle("running", nodeId === id);
    if (nodeId === id) group.classList.add("visited");
  }
}

// -- what waits for a person ----------------------------------------------------------------------------------

function entryKey(entry) {
  return JSON.stringify([entry.checkpoint_id, entry.session_id || "", entry.interrupts.map((i) => i.id)]);
}

function answerCard(entry) {
  const key = entryKey(entry);
  const dismiss = element("button", { type: "button", class: "dismiss", title: "dismiss this card", "aria-label": `dismiss ${entry.checkpoint_id}` }, "×");
  const card = element("div", { class: "card" }, dismiss, element("div", {}, element("strong", {}, entry.agent), ` · ${entry.checkpoint_id}`));
  dismiss.addEventListener("click", () => {
    if (card.classList.contains("stale")) ui.cards.delete(key);  // nothing waits on it any more: gone for good
    else ui.dismissed.add(key);
    sessionStorage.setItem("batonflow.dismissed", JSON.stringify([...ui.dismissed]));
    drawCards();
  });
  const readers = [];
  for (const interrupt of entry.interrupts) {
    if (interrupt.kind === "approval") {
      for (const task of interrupt.info.tasks) {
        const args = element("textarea", { rows: "2", "aria-label": `arguments of ${task.call_id}` });
        args.value = task.arguments;
        const choice = element("select", { "aria-label": `decision on ${task.call_id}` },
          element("option", { value: "approve" }, "approve"), element("option", { value: "reject" }, "reject"),
          element("option", { value: "skip" }, "skip"));
        card.append(element("div", { class: "task" }, `${task.tool_name}: ${task.comment || ""}`, args, choice));
        readers.push(() => {
          const decision = { action: choice.value };
          if (args.value.trim() !== task.arguments.trim()) decision.modified_args = JSON.parse(args.value);
          return [interrupt.id, task.call_id, decision];
        });
      }
    } else {
      const answer = element("input", { "aria-label": `answer to ${interrupt.id}`, placeholder: "your answer (JSON or text)" });
      card.append(element("div", { class: "task" }, brief(fields(interrupt.info), 240)), answer);
      readers.push(() => {
        let value = answer.value;
        try { value = JSON.parse(value); } catch (_) { /* text */ }
        return [interrupt.id, null, value];
      });
    }
  }
  card.append(element("button", { type: "button", class: "answer", onclick: () => resume(entry, readers, card) }, "answer and resume"));
  return card;
}

// A card whose run no longer waits (answered elsewhere, ended, gone): said so, and left to be dismissed.
function markStale(card, reason) {
  card.classList.add("stale");
  for (const field of card.querySelectorAll("textarea, select, input, button.answer")) field.disabled = true;
  card.append(element("p", { class: "note error" }, `stale: ${reason}`));
}

function resume(entry, readers, card) {
  const targets = {};
  try {
    for (const read of readers) {
      const [id, call_id, value] = read();
      if (call_id === null) targets[id] = value;
      else (targets[id] = targets[id] || {})[call_id] = value;
    }
  } catch (error) {
    status(`the arguments are not JSON: ${error}`, true);
    return;
  }
  // A conversation may share its id with a checkpoint: say which one is answered.
  const which = entry.session_id ? "?session=true" : "";
  const refused = (code, reason) => { if (code === 404 || code === 409) markStale(card, reason); };
  stream(`/checkpoints/${segment(entry.checkpoint_id)}/resume${which}`, { targets, stream: true, trace: true },
    `resume of ${entry.checkpoint_id}`, refused);
}

// The cards of what waits now: new ones added, those that no longer wait removed, what was typed in the others kept.
function showPending(pending) {
  const now = new Map(pending.map((entry) => [entryKey(entry), entry]));
  for (const [key, card] of ui.cards) {
    if (!now.has(key) && !card.classList.contains("stale")) ui.cards.delete(key);
  }
  for (const [key, entry] of now) if (!ui.cards.has(key)) ui.cards.set(key, answerCard(entry));
  for (const key of ui.dismissed) if (!ui.cards.has(key)) ui.dismissed.delete(key);  // only cards still there
  sessionStorage.setItem("batonflow.dismissed", JSON.stringify([...ui.dismissed]));
  drawCards();
}

function drawCards() {
  const shown = [...ui.cards].filter(([key]) => !ui.dismissed.has(key)).map(([, card]) => card);
  const hidden = ui.cards.size - shown.length;
  const restore = element("button", { type: "button", class: "restore" }, `show ${hidden} dismissed`);
  restore.addEventListener("click", () => {
    ui.dismissed.clear();
    sessionStorage.removeItem("batonflow.dismissed");
    drawCards();
  });
  $("#pending").replaceChildren(...(shown.length ? shown : [element("p", { class: "muted" }, "nothing pending")]), ...(hidden ? [restore] : []));
}

// -- side lists -----------------------------------------------------------------------------------------------

async function refreshSide() {
  try {
    const [pending, sessions] = await Promise.all([api("GET", "/checkpoints"), api("GET", "/sessions")]);
    showPending(pending.checkpoints);
    $("#sessions").replaceChildren(...sessions.sessions.map((id) => element("li", { onclick: () => openSession(id) }, id)));
  } catch (error) {
    status(String(error.message || error), true);
  }
}

async function openSession(id) {
  $("#session").value = id;
  const data = await api("GET", `/sessions/${segment(id)}`);
  $("#chat").replaceChildren();
  for (const message of data.messages) {
    if (message.role === "user") say("you", message.content, "user");
    else if (message.content && !message.tool_calls) say(message.name || "agent", message.content, "agent", message);
  }
  drawState(data.attributes);
}

function flowRow(flow) {
  const variables = element("input", { "aria-label": `variables of ${flow.id}`, placeholder: '{"key": "value"}' });
  const key = `flows/${flow.id}`;
  const run = async () => {
    try {
      const ended = await api("POST", `/flows/${segment(flow.id)}/eval`, { variables: JSON.parse(variables.value || "{}") });
      inspect(ended);
      await showDiagram(key);
      markRunning(null);
      const last = ui.diagram && ui.diagram.nodes.get(ended.last_node);
      if (last) last.classList.add("visited", "last");
      drawState(ended.variables);
      status(`flow ${flow.id}: ${ended.status}`, ended.status === "failed");
    } catch (error) { status(String(error.message || error), true); }
  };
  return element("div", { class: "task" }, `${flow.id} `, variables, element("button", { type: "button", onclick: run }, "run"),
    element("button", { type: "button", onclick: () => showDiagram(key) }, "diagram"));
}

async function loadServed() {
  const [agents, flows] = await Promise.all([api("GET", "/agents"), api("GET", "/flows")]);
  const chosen = $("#agent").value;  // kept across a reload of the list (a new token, say)
  $("#agent").replaceChildren(...agents.agents.map((a) => element("option", { value: a.name, title: a.description }, a.name)));
  if (agents.agents.some((a) => a.name === chosen)) $("#agent").value = chosen;
  if (flows.flows.length) $("#flows").replaceChildren(...flows.flows.map(flowRow));
  if ($("#agent").value) showDiagram(`agents/${$("#agent").value}`);
}

// -- wiring ---------------------------------------------------------------------------------------------------

$("#token").value = ui.token;
$("#token").addEventListener("change", () => {
  ui.token = $("#token").value;
  sessionStorage.setItem("batonflow.token", ui.token);
  ui.structures.clear();
  start();
});
$("#agent").addEventListener("change", () => showDiagram(`agents/${$("#agent").value}`));
$("#new-session").addEventListener("click", () => {
  $("#session").value = `ui-${Math.random().toString(36).slice(2, 10)}`;
  $("#chat").replaceChildren();
});
$("#stop").addEventListener("click", () => ui.streams.length && ui.streams[ui.streams.length - 1].controller.abort());
$("#prompt").addEventListener("submit", (submitted) => {
  submitted.preventDefault();
  const text = $("#input").value.trim();
  if (!text) return;
  $("#input").value = "";
  say("you", text, "user");
  const body = { agent: $("#agent").value, input: text, stream: true, trace: true };
  if ($("#session").value.trim()) body.session_id = $("#session").value.trim();
  stream("/runs", body, "run");
});

// The run the address names, read again from the server with the segments before it (every segment its log
// keeps, in order): its tree, its chat, its timeline and its state as the live page showed them.
function restore() {
  const id = new URLSearchParams(location.hash.slice(1)).get("run");
  if (id && ![...ui.views.values()].some((view) => view.runId === id)) {
    stream(`/runs/${segment(id)}/events?history=true`, null, `replay of ${id.replace(/@[^@]*$/, "")}`);
  }
}

let polling = null;

async function start() {
  try {
    await loadServed();
    await refreshSide();
    status("ready");
    polling = polling || setInterval(refreshSide, POLL_MS);
    restore();
  } catch (error) {
    status(`${error.message || error} (set the token?)`, true);
  }
}

start();
