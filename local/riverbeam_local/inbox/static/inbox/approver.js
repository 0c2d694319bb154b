// The approver's view: every pending action the caller may answer, in any session (GET /approvals: by user
// id or by one of their groups), read again every few seconds. Each card decides with a resume of its own
// session; a vote short of the action's quorum starts nothing, and the card says how many it has. The
// actions of the session open beside it are left out (they are under its Pending approvals), and each card
// shows the conversation that led to the ask (a listed approver may read the session's messages).
import { card, tickCountdowns } from "./approvals.js";
import { visible, visibleJson } from "./display.js";

const POLL_MS = 2000;
// the conversation shown on a card: its last entries (the ask is at its end)
const TALK_ENTRIES = 20;

// a message's parts as lines "who: text", each escaped as the page escapes everything
function talkLines(message, owner) {
  const who = message.role === "human" ? owner : "agent";
  return (message.content || []).map((part) => {
    if (part.type === "text") return [who, part.text];
    if (part.type === "tool_call") return ["tool call", `${part.name} ${visibleJson(part.args)}`];
    if (part.type === "tool_result") return [part.name || "tool", String(part.status)];
    if (part.type === "action_response") return ["decision", String(part.status)];
    return [part.type || "part", visibleJson(part)];
  });
}

function drawTalk(list, messages, owner) {
  const lines = messages.flatMap((message) => talkLines(message, owner));
  const items = lines.slice(-TALK_ENTRIES).map(([who, text]) => {
    const item = document.createElement("li");
    const label = document.createElement("span");
    label.className = "who";
    label.textContent = visible(`${who}: `);
    item.append(label, visible(text, { lines: true }));
    return item;
  });
  if (lines.length > TALK_ENTRIES) items.unshift(Object.assign(document.createElement("li"), { textContent: "(earlier messages left out)" }));
  if (!items.length) items.push(Object.assign(document.createElement("li"), { textContent: "(no messages yet)" }));
  list.replaceChildren(...items);
}

// the session's conversation, read with the approver's own identity, under the card's header
function conversation(api, node, action) {
  const talk = document.createElement("details");
  talk.className = "talk";
  talk.open = true;
  const summary = document.createElement("summary");
  summary.textContent = "The conversation that led to it";
  const list = document.createElement("ol");
  list.dataset.testid = "approval-conversation";
  talk.append(summary, list);
  node.querySelector(".owner").after(talk);
  api
    .all(`/sessions/${action.session_id}/messages`, "messages")
    .then((messages) => drawTalk(list, messages, action.user_id))
    .catch((error) => (list.textContent = visible(`The conversation cannot be read: ${error.message}`)));
  return node;
}

// "Session 0e99... of u1": whose request it is (the approver is not its owner)
function owner(node, action) {
  const line = document.createElement("p");
  line.className = "owner";
  line.dataset.testid = "approval-owner";
  line.textContent = visible(`Session ${action.session_id} of ${action.user_id}`);
  node.querySelector(".asked").after(line);
  return node;
}

// a card is drawn again when its votes change (another approver voted); else it keeps its state
const key = (action) => `${action.action_id}:${(action.votes || []).length}`;

// `options.openSession()`: the session open beside this view (its actions left out); `options.confirm(action,
// response, ack)`: a decision confirmed on the page
export function startApproverView(api, $, showError, options) {
  const list = $("approver-approvals");
  let reading = null;
  let refused = false; // the stack refused the page (no secret): not asked again until the identity changes

  async function decide(action, response) {
    const ack = await api.request("POST", "/resume", {
      body: { agent_name: action.agent_name, session_id: action.session_id, interaction_id: action.interaction_id, actions: [response] },
    });
    options.confirm(action, response, ack);
    await refresh();
  }

  async function read() {
    let actions = [];
    try {
      const page = await api.request("GET", "/approvals", { query: { status: "pending", limit: 100 } });
      actions = ((page && page.actions) || []).filter((action) => action.session_id !== options.openSession());
    } catch (error) {
      refused = error.code === "BEM-033";
      if (error.status !== 0) showError(error); // no user id yet: nothing to read
      return;
    }
    refused = false;
    const kept = new Map([...list.children].map((node) => [node.dataset.key, node]));
    list.replaceChildren(
      ...actions.map((action) => {
        const node = kept.get(key(action)) || conversation(api, owner(card($("approval-template"), action, decide), action), action);
        node.dataset.key = key(action);
        return node;
      }),
    );
    $("approver-count").textContent = String(actions.length);
    $("approver-empty").hidden = actions.length > 0;
    tickCountdowns(list);
  }

  // one read at a time: a poll that comes while one is on its way waits for it
  function refresh() {
    reading = reading || read().finally(() => (reading = null));
    return reading;
  }

  setInterval(() => refused || refresh(), POLL_MS);
  setInterval(() => tickCountdowns(list), 1000);
  refresh();
  return refresh;
}
