// The approval inbox: a session's conversation as it streams, and its pending approvals to decide; beside
// it, every approval the caller may answer in any session (approver.js).
// State that must survive a reload lives on the server (messages, pending actions, a run's frames) and in
// the URL (?session=); the user id is kept in localStorage, the run this tab follows in sessionStorage.
import { Api, Runs, Subscription, settings } from "./api.js";
import { card, drawDiff, pretty, tickCountdowns, uuid4 } from "./approvals.js";
import { startApproverView } from "./approver.js";
import { loadGrants } from "./grants.js";
import { visible, visibleJson } from "./display.js";
import { confirmDecision } from "./notices.js";

const $ = (id) => document.getElementById(id);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const state = { session: null, notYours: false, generation: 0, loads: 0, socket: null, runs: null, bubbles: new Map(), calls: new Map(), failures: new Map() };
const groups = () => $("groups").value.split(",").map((name) => name.trim()).filter(Boolean);
const api = new Api(() => ({ user: $("user-id").value.trim(), token: $("token").value.trim(), groups: groups() }));
const runKey = (sessionId) => `riverbeam.run.${sessionId}`;
// a session this tab started and has not messaged yet: the stack has nothing of it, so nothing is read
const freshKey = (sessionId) => `riverbeam.fresh.${sessionId}`;
const isFresh = (sessionId) => sessionStorage.getItem(freshKey(sessionId)) !== null;
// who a confirmation names: the user id, or "you" where a token says who
const viewer = () => ($("user-id").hidden ? "you" : $("user-id").value.trim());

// the local stack refuses a page opened without its secret (BEM-033): said as what to do about it
const NO_SECRET = () =>
  `BEM-033: this page needs the stack's secret: open the Inbox page address that riverbeam dev printed (${window.location.origin}/#secret=...), with its #secret part.`;

// ------------------------------------------------------------------ errors and the conversation

// the last few errors, each once (a refused read and a refused subscription may come together)
function showError(error) {
  const missingSecret = error.code === "BEM-033" && settings.auth !== "jwt";
  const said = missingSecret ? NO_SECRET() : error.code ? `${error.code}: ${error.detail}` : String(error.message || error);
  const text = visible(said);
  const shown = [...$("errors").children].filter((item) => item.textContent !== text).slice(-2);
  const item = document.createElement("p");
  item.className = "error";
  item.dataset.testid = "error";
  item.textContent = text;
  $("errors").replaceChildren(...shown, item);
}

// one entry of the conversation: its text shown as text (never HTML), hidden characters escaped
function entry(kind, label, text) {
  const item = document.createElement("li");
  item.className = `entry ${kind}`;
  item.dataset.kind = kind;
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = visible(label);
  const body = document.createElement("div");
  body.className = "body";
  body.textContent = visible(text, { lines: true });
  item.append(who, body);
  $("conversation").append(item);
  item.scrollIntoView({ block: "nearest" });
  return body;
}

const brief = (value) => (typeof value === "string" ? value : visibleJson(value));

// a tool's output as lines a person reads: key=value, a text of several lines under its key
function outputText(output) {
  if (output === null || output === undefined) return "";
  if (typeof output !== "object" || Array.isArray(output)) return `\n${brief(output)}`;
  const lines = Object.entries(output).map(([key, value]) =>
    typeof value === "string" && value.includes("\n") ? `${key}:\n${value.trim()}` : `${key}=${brief(value)}`,
  );
  return `\n${lines.join("\n")}`;
}

function showResult(part) {
  const error = part.error ? ` ${part.error.code}: ${part.error.message}` : "";
  entry(`result ${part.status}`, part.name || "tool", `${part.status}${error}${outputText(part.output)}`);
}

function showCall(call) {
  state.calls.set(call.tool_call_id, call.args);
  entry("call", "tool call", `${call.name} ${visibleJson(call.args)}`);
}

// a decision as the conversation records it; edited args drawn as a diff of what the agent asked for
function showDecision(part) {
  if (part.status === "cancelled") return entry("decision rejected", "you", `Rejected${part.reason ? `: ${part.reason}` : ""}`);
  const body = entry("decision approved", "you", part.edited_args ? "Approved with edited args" : "Approved");
  const asked = state.calls.get(part.action_id);
  if (part.edited_args && asked) {
    const diff = document.createElement("pre");
    diff.className = "diff";
    drawDiff(diff, asked, part.edited_args);
    body.append(diff);
  }
  return body;
}

function showMessage(message) {
  for (const part of message.content || []) {
    if (part.type === "text") entry(message.role === "human" ? "human" : "agent", message.role === "human" ? "you" : "agent", part.text);
    else if (part.type === "tool_call") showCall(part);
    else if (part.type === "tool_result") showResult(part);
    else if (part.type === "action_response") showDecision(part);
    else entry("note", part.type || "part", brief(part));
  }
}

// A tool's failure comes as an `error` frame, then its `tool_result` with the same error: it is held, and
// shown only if anything but that result follows (a run's own failure: its `done`), so it is said once.
function reportsHeld(frame, held) {
  return frame.type === "tool_result" && Boolean(frame.error) && frame.error.code === held.code;
}

function showFrame(frame) {
  const runId = frame.run_id;
  const held = state.failures.get(runId);
  state.failures.delete(runId);
  if (held && !reportsHeld(frame, held)) entry("failure", "error", `${held.code}: ${held.message}`);
  if (frame.type !== "text_delta") state.bubbles.delete(runId); // the next text starts a new bubble
  switch (frame.type) {
    case "run_started":
      return;
    case "text_delta": {
      if (!state.bubbles.has(runId)) state.bubbles.set(runId, entry("agent", "agent", ""));
      state.bubbles.get(runId).textContent += visible(frame.text, { lines: true });
      return;
    }
    case "tool_call":
      return showCall(frame);
    case "tool_result":
      return showResult(frame);
    case "error":
      state.failures.set(runId, frame);
      return;
    case "done":
      return loadApprovals();
    case "action_expired":
      entry("note", "expired", `The approval of ${frame.tool} expired unanswered (${frame.action_id}).`);
      return loadApprovals();
    default:
      // a frame this page does not know (an expiry notice, say): said in one line, and the inbox re-read
      entry("note", "notice", `${frame.type || "frame"}${frame.action_id ? ` ${frame.action_id}` : ""}`);
      return loadApprovals();
  }
}

// ------------------------------------------------------------------ approvals

async function decide(action, response) {
  // shown before it is sent, so it stands before the agent's answer; taken back if refused
  const shown = showDecision({ ...response, action_id: action.action_id }).parentElement;
  let ack;
  try {
    ack = await api.request("POST", "/resume", {
      body: { agent_name: action.agent_name || $("agent").value, session_id: state.session, interaction_id: action.interaction_id, actions: [response] },
    });
  } catch (error) {
    shown.remove();
    throw error;
  }
  confirmDecision($("notices"), action, response, ack, viewer());
  if (ack.run_id) followRun(ack.run_id); // a vote short of the quorum starts no run (ack.pending)
  await loadApprovals();
}

async function loadApprovals() {
  if (state.notYours) return;
  const session = state.session;
  const ticket = ++state.loads; // only the latest read is drawn: an older one may answer last
  let actions = [];
  try {
    if (!isFresh(session)) actions = await api.all(`/sessions/${session}/actions`, "actions", undefined, { status: "pending" });
  } catch (error) {
    if (error.status !== 404) showError(error); // a session opened by id that was never messaged
  }
  if (ticket !== state.loads || session !== state.session) return;
  const pending = actions.filter((action) => action.status === "pending");
  const list = $("approvals");
  const kept = new Map([...list.children].map((node) => [node.dataset.actionId, node]));
  // a card being edited keeps its state: only the cards of decided actions go, and new ones come
  const draw = (action) => card($("approval-template"), action, decide, { canGrant: true, owner: true });
  list.replaceChildren(...pending.map((action) => kept.get(action.action_id) || draw(action)));
  $("approval-count").textContent = String(pending.length);
  $("no-approvals").hidden = pending.length > 0;
  tickCountdowns(list);
  if (!isFresh(session)) await loadGrants(api, session, { list: $("grants"), empty: $("no-grants") }, showError);
  else $("grants").replaceChildren();
}

// ------------------------------------------------------------------ sessions and runs

function followRun(runId) {
  sessionStorage.setItem(runKey(state.session), runId);
  state.runs.follow(runId);
  state.runs.replay(runId);
}

// the run in progress, if any (the last one this tab started, or the active run of the last interaction),
// and whether a run was seen ended (it may have ended after the messages were read)
async function runInProgress(sessionId, messages) {
  const last = messages[messages.length - 1];
  const candidates = [sessionStorage.getItem(runKey(sessionId))];
  if (last) {
    const interaction = await api.request("GET", `/interactions/${last.interaction_id}`).catch(() => null);
    candidates.push(interaction && interaction.active_run_id);
  }
  let ended = false;
  for (const runId of new Set(candidates.filter(Boolean))) {
    const run = await api.request("GET", `/runs/${runId}`).catch((error) => (error.status === 404 ? { status: "queued" } : null));
    if (run && (run.status === "running" || run.status === "queued")) return { running: runId, ended };
    ended = true;
  }
  return { running: null, ended };
}

async function readMessages(sessionId) {
  if (isFresh(sessionId)) return [];
  try {
    return await api.all(`/sessions/${sessionId}/messages`, "messages");
  } catch (error) {
    if (error.status === 404) return []; // a new session
    throw error;
  }
}

// After a reload: the stored conversation, then the run in progress replayed from its frames (its own
// messages are left out: they are stored only when it ends, and its frames show them).
async function restore(sessionId, generation) {
  let messages = await readMessages(sessionId);
  const { running, ended } = await runInProgress(sessionId, messages);
  if (ended) messages = await readMessages(sessionId); // a run that ended meanwhile is all in it now
  if (generation !== state.generation) return;
  for (const message of messages) {
    if (message.run_id !== running || message.role === "human") showMessage(message);
    if (message.run_id !== running) state.runs.settle(message.run_id);
  }
  if (running) followRun(running);
  await loadApprovals();
}

async function openSession(sessionId, { fresh = false } = {}) {
  if (!UUID.test(sessionId)) return showError(new Error("A session id is a UUID (or start a new session)."));
  if (fresh) sessionStorage.setItem(freshKey(sessionId), "1");
  $("errors").replaceChildren();
  if (state.socket) state.socket.close();
  if (state.runs) state.runs.stop();
  const generation = ++state.generation;
  Object.assign(state, { session: sessionId, notYours: false, bubbles: new Map(), calls: new Map(), failures: new Map() });
  $("session-id").value = sessionId;
  const url = new URL(window.location.href);
  url.searchParams.set("session", sessionId);
  window.history.replaceState(null, "", url);
  $("conversation").replaceChildren();
  $("approvals").replaceChildren();
  state.runs = new Runs(api, showFrame);
  state.socket = new Subscription(api, sessionId, (frame) => state.runs.add(frame), onConnection);
  state.socket.open();
  try {
    await restore(sessionId, generation);
  } catch (error) {
    showError(error);
  }
}

function setConnection(status) {
  $("connection").textContent = status;
  $("connection").dataset.state = status;
}

// Another user's session: said once, plainly, and nothing more is tried (no reconnecting, no re-reads).
function notYours(sessionId) {
  if (sessionId !== state.session || state.notYours) return;
  state.notYours = true;
  if (state.socket) state.socket.close();
  if (state.runs) state.runs.stop();
  setConnection("not your session");
  const user = $("user-id").hidden ? "the token's user" : $("user-id").value.trim();
  const item = document.createElement("p");
  item.className = "error";
  item.dataset.testid = "not-yours";
  item.textContent = visible(
    `Session ${sessionId} is not yours (${user}): it belongs to another user. Open one of your sessions or start a new one.`,
  );
  $("errors").replaceChildren(item);
}

// A refused subscription: the session exists but the API shows it not (404) or refuses it (403) to this user:
// it is another user's. A session of the user's (200) or a server out of reach: retried as before.
async function checkRefusal(sessionId, error) {
  try {
    await api.request("GET", `/sessions/${sessionId}`);
  } catch (refused) {
    if (refused.status === 404 || refused.status === 403) return notYours(sessionId);
  }
  if (sessionId === state.session && !state.notYours) showError(error);
}

function onConnection(status, error) {
  if (state.notYours) return;
  setConnection(status);
  if (error && error.code === "not subscribed") checkRefusal(state.session, error);
  else if (error) showError(error);
  if (status === "connected" && state.runs) {
    state.runs.replayAll(); // frames sent while the socket was down
    loadApprovals();
  }
}

async function send(event) {
  event.preventDefault();
  const text = $("message").value.trim();
  if (!text) return;
  if (!state.session) await openSession(uuid4(), { fresh: true });
  try {
    const ack = await api.request("POST", "/invoke", {
      body: { agent_name: $("agent").value.trim(), session_id: state.session, content: [{ type: "text", text }], stream: true },
    });
    sessionStorage.removeItem(freshKey(state.session)); // the stack has the session now
    $("errors").replaceChildren();
    entry("human", "you", text);
    $("message").value = "";
    followRun(ack.run_id);
  } catch (error) {
    if (error.code === "BEM-031") notYours(state.session);
    else showError(error);
  }
}

function start() {
  const params = new URLSearchParams(window.location.search);
  const jwt = settings.auth === "jwt";
  $("user-id").hidden = $("user-label").hidden = jwt;
  $("token").hidden = $("token-label").hidden = !jwt || Boolean(settings.getToken);
  $("user-id").value = params.get("user") || localStorage.getItem("riverbeam.user") || "";
  $("groups").hidden = $("groups-label").hidden = jwt; // a token carries its own groups
  $("groups").value = params.get("groups") || "";
  localStorage.setItem("riverbeam.user", $("user-id").value);
  $("agent").value = settings.agent;
  const identityChanged = () => {
    localStorage.setItem("riverbeam.user", $("user-id").value.trim());
    if (state.session) openSession(state.session);
  };
  $("user-id").addEventListener("change", identityChanged);
  $("token").addEventListener("change", identityChanged);
  $("message").addEventListener("keydown", (event) => {
    // Enter sends, Shift+Enter is a new line
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("message-form").requestSubmit();
    }
  });
  $("identity-form").addEventListener("submit", (event) => event.preventDefault());
  $("session-form").addEventListener("submit", (event) => {
    event.preventDefault();
    openSession($("session-id").value.trim());
  });
  $("new-session").addEventListener("click", () => openSession(uuid4(), { fresh: true }));
  $("message-form").addEventListener("submit", send);
  setInterval(() => tickCountdowns($("approvals")), 1000);
  const refreshApprover = startApproverView(api, $, showError, {
    openSession: () => state.session, // its actions are under Pending approvals: shown once
    confirm: (action, response, ack) => confirmDecision($("notices"), action, response, ack, viewer()),
  });
  $("user-id").addEventListener("change", refreshApprover);
  $("groups").addEventListener("change", refreshApprover);
  if (params.get("session")) openSession(params.get("session"));
}

start();
