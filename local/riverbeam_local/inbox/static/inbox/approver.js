// The approver's view: every pending action the caller may answer, in any session (GET /approvals: by user
// id or by one of their groups), read again every few seconds. Each card decides with a resume of its own
// session; a vote short of the action's quorum starts nothing, and the card says how many it has.
import { card, tickCountdowns } from "./approvals.js";
import { visible } from "./display.js";

const POLL_MS = 2000;

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

export function startApproverView(api, $, showError) {
  const list = $("approver-approvals");
  let reading = null;

  async function decide(action, response) {
    await api.request("POST", "/resume", {
      body: { agent_name: action.agent_name, session_id: action.session_id, interaction_id: action.interaction_id, actions: [response] },
    });
    await refresh();
  }

  async function read() {
    let actions = [];
    try {
      const page = await api.request("GET", "/approvals", { query: { status: "pending", limit: 100 } });
      actions = (page && page.actions) || [];
    } catch (error) {
      if (error.status !== 0) showError(error); // no user id yet: nothing to read
      return;
    }
    const kept = new Map([...list.children].map((node) => [node.dataset.key, node]));
    list.replaceChildren(
      ...actions.map((action) => {
        const node = kept.get(key(action)) || owner(card($("approval-template"), action, decide), action);
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

  setInterval(refresh, POLL_MS);
  setInterval(() => tickCountdowns(list), 1000);
  refresh();
  return refresh;
}
