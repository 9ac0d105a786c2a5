// The batonflow dev UI: plain JavaScript over the server's API (no build step). It streams runs with fetch (so that
// the bearer token travels in a header, which EventSource cannot send), draws each run's tree from the events' run
// paths, lists what waits for a person and answers it, and shows the trace as a timeline.
"use strict";

const $ = (selector) => document.querySelector(selector);
const COLOURS = ["#0b7285", "#862e9c", "#2b8a3e", "#e67700", "#1864ab", "#c92a2a", "#5f3dc4", "#087f5b"];
const ui = { token: sessionStorage.getItem("batonflow.token") || "", controller: null, bubbles: new Map(), tree: null };

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

async function stream(path, body) {
  ui.controller = new AbortController();
  $("#stop").disabled = false;
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal: ui.controller.signal,
    });
    if (!response.ok) {
      const data = await response.json();
      status(data.error ? data.error.message : response.statusText, true);
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
        if (frame) onFrame(frame);
      }
    }
  } catch (error) {
    status(error.name === "AbortError" ? "stopped: the run was cancelled" : String(error), error.name !== "AbortError");
  } finally {
    ui.controller = null;
    $("#stop").disabled = true;
    refreshSide();
  }
}

// -- what a run says ------------------------------------------------------------------------------------------

function say(who, text, cls, data) {
  const bubble = element("div", { class: `bubble ${cls}`, style: { "--colour": colour(who) } });
  if (cls === "agent") bubble.append(element("span", { class: "who" }, who));
  const body = element("span", { class: "text" }, text);
  bubble.append(body);
  if (data) bubble.addEventListener("click", () => inspect(data));
  $("#chat").append(bubble);
  $("#chat").scrollTop = $("#chat").scrollHeight;
  return body;
}

function note(text, cls, data, who = "") {
  const line = element("div", { class: `note ${cls}`, style: { "--colour": colour(who) } }, text);
  if (data) line.addEventListener("click", () => inspect(data));
  $("#chat").append(line);
  $("#chat").scrollTop = $("#chat").scrollHeight;
}

function inspect(data) {
  const pane = $("#inspector");
  pane.className = "";
  pane.textContent = JSON.stringify(data, null, 2);
}

function call(toolCall) {
  let shown = toolCall.arguments;
  try {
    shown = Object.entries(JSON.parse(toolCall.arguments || "{}")).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
  } catch (_) { /* arguments that are not JSON, as the model wrote them */ }
  return `${toolCall.name}(${shown})`;
}

function onFrame(frame) {
  const data = frame.data;
  switch (frame.event) {
    case "run":
      ui.run = data;
      ui.bubbles.clear();
      startTree(data);
      status(`run ${data.run_id} of ${data.agent}${data.resumed ? " (resumed)" : ""}`);
      break;
    case "message_start":
      if (data.role === "assistant") ui.bubbles.set(data.seq, { agent: data.agent, text: null });
      break;
    case "delta": {
      const bubble = ui.bubbles.get(data.seq);
      if (!bubble || !data.content) break;
      if (bubble.text === null) bubble.text = say(bubble.agent, "", "agent");
      bubble.text.textContent += data.content;
      break;
    }
    case "message":
    case "transfer":
    case "interrupt":
    case "action":
    case "error":
      onEvent(frame.event, data);
      break;
    case "trace":
      onTrace(data);
      break;
    case "gap":
      note(`… ${data.count} event record(s) lost (${data.missing.from} to ${data.missing.to}): ${data.reason}`, "error", data);
      break;
    case "end": {
      const lost = data.end_record === "lost" ? ` (its end record was lost: ${data.reason})` : "";
      status(`${data.status}${data.error ? `: ${data.error.type}: ${data.error.message}` : ""}${lost}`, data.status === "failed");
      break;
    }
  }
}

function onEvent(kind, event) {
  addToTree(kind, event);
  const message = event.message;
  if (message && message.role === "assistant") {
    const bubble = ui.bubbles.get(event.seq);
    if (bubble && bubble.text) bubble.text.parentElement.addEventListener("click", () => inspect(event));
    else if (message.content) say(event.agent, message.content, "agent", event);
    for (const toolCall of message.tool_calls || []) {
      if (toolCall.name !== "transfer_to_agent") note(`⚙ ${event.agent} calls ${call(toolCall)}`, "", event);
    }
  } else if (kind === "transfer") {
    note(`⇢ ${event.agent} transfers to ${event.action.transfer_to}`, "transfer", event, event.agent);
  } else if (message && message.role === "tool") {
    note(`← ${message.tool_name}: ${message.content}`, "", event);
  }
  if (kind === "interrupt") {
    for (const interrupt of event.action.interrupted.interrupts) {
      note(`? ${event.agent} waits: ${JSON.stringify(interrupt.info)}`, "", event);
    }
  }
  if (kind === "error") note(`error: ${event.error.type}: ${event.error.message}`, "error", event);
}

// -- the run tree ---------------------------------------------------------------------------------------------

function startTree(run) {
  ui.tree = { name: run.agent, events: [], children: new Map() };
  $("#timeline tbody").replaceChildren();
  drawTree();
}

function addToTree(kind, event) {
  let node = ui.tree;
  const path = event.run_path.length ? event.run_path : [event.agent];
  for (const [i, name] of path.entries()) {
    if (i === 0 && name === node.name) continue;
    if (!node.children.has(name)) node.children.set(name, { name, events: [], children: new Map() });
    node = node.children.get(name);
  }
  node.events.push({ kind, event });
  drawTree();
}

function summary(kind, event) {
  const message = event.message;
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
    list.append(element("li", { class: "event", onclick: () => inspect(event) }, `#${event.seq} ${summary(kind, event)}`));
  }
  for (const child of node.children.values()) list.append(drawNode(child));
  item.append(list);
  return item;
}

function drawTree() {
  $("#tree").replaceChildren(element("ul", {}, drawNode(ui.tree)));
}

function onTrace(event) {
  if (!event.kind.endsWith("_end")) return;
  const tokens = event.metrics ? event.metrics.total_tokens ?? (event.metrics.total || {}).total_tokens : event.usage ? event.usage.total_tokens : "";
  const what = event.kind === "tool_call_end" ? `tool ${event.tool_name}` : event.kind.replace("_end", "");
  const row = element("tr", { onclick: () => inspect(event) },
    element("td", {}, what), element("td", {}, event.agent_name || ""),
    element("td", {}, (event.duration_ms || 0).toFixed(1)), element("td", {}, tokens === undefined ? "" : String(tokens)));
  $("#timeline tbody").append(row);
}

// -- what waits for a person ----------------------------------------------------------------------------------

function answerCard(entry) {
  const card = element("div", { class: "card" }, element("div", {}, element("strong", {}, entry.agent), ` · ${entry.checkpoint_id}`));
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
      card.append(element("div", { class: "task" }, JSON.stringify(interrupt.info)), answer);
      readers.push(() => {
        let value = answer.value;
        try { value = JSON.parse(value); } catch (_) { /* text */ }
        return [interrupt.id, null, value];
      });
    }
  }
  card.append(element("button", { type: "button", onclick: () => resume(entry, readers) }, "answer and resume"));
  return card;
}

function resume(entry, readers) {
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
  stream(`/checkpoints/${segment(entry.checkpoint_id)}/resume${which}`, { targets, stream: true, trace: true });
}

// -- side lists -----------------------------------------------------------------------------------------------

async function refreshSide() {
  try {
    const [pending, sessions] = await Promise.all([api("GET", "/checkpoints"), api("GET", "/sessions")]);
    $("#pending").replaceChildren(...(pending.checkpoints.length ? pending.checkpoints.map(answerCard) : [element("p", { class: "muted" }, "nothing pending")]));
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
}

async function loadServed() {
  const [agents, flows] = await Promise.all([api("GET", "/agents"), api("GET", "/flows")]);
  const chosen = $("#agent").value;  // kept across a reload of the list (a new token, say)
  $("#agent").replaceChildren(...agents.agents.map((a) => element("option", { value: a.name, title: a.description }, a.name)));
  if (agents.agents.some((a) => a.name === chosen)) $("#agent").value = chosen;
  if (flows.flows.length) {
    $("#flows").replaceChildren(...flows.flows.map((flow) => {
      const variables = element("input", { "aria-label": `variables of ${flow.id}`, placeholder: '{"key": "value"}' });
      const run = async () => {
        try {
          inspect(await api("POST", `/flows/${segment(flow.id)}/eval`, { variables: JSON.parse(variables.value || "{}") }));
        } catch (error) { status(String(error.message || error), true); }
      };
      return element("div", { class: "task" }, `${flow.id} `, variables, element("button", { type: "button", onclick: run }, "run"));
    }));
  }
}

// -- wiring ---------------------------------------------------------------------------------------------------

$("#token").value = ui.token;
$("#token").addEventListener("change", () => {
  ui.token = $("#token").value;
  sessionStorage.setItem("batonflow.token", ui.token);
  start();
});
$("#new-session").addEventListener("click", () => {
  $("#session").value = `ui-${Math.random().toString(36).slice(2, 10)}`;
  $("#chat").replaceChildren();
});
$("#stop").addEventListener("click", () => ui.controller && ui.controller.abort());
$("#prompt").addEventListener("submit", (submitted) => {
  submitted.preventDefault();
  const text = $("#input").value.trim();
  if (!text) return;
  $("#input").value = "";
  say("you", text, "user");
  const body = { agent: $("#agent").value, input: text, stream: true, trace: true };
  if ($("#session").value.trim()) body.session_id = $("#session").value.trim();
  stream("/runs", body);
});

async function start() {
  try {
    await loadServed();
    await refreshSide();
    status("ready");
  } catch (error) {
    status(`${error.message || error} (set the token?)`, true);
  }
}

start();
