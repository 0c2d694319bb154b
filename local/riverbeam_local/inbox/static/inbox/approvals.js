// The pending approvals: one card per action, with its tool, args, hash and time left, and the three
// decisions. Every decision is a resume carrying the action's args_sha256, so the server refuses it
// (BEM-067) if the args are no longer those the person saw. What the card shows is what runs: text goes in
// with textContent, and control, bidi and invisible characters as visible escapes (display.js), with a
// warning where the args hold any.
import { hiddenWarning, visible, visibleJson } from "./display.js";

// args as the card, the editor and the diff show them: JSON of the same value, hidden characters escaped
export const pretty = (value) => visibleJson(sortKeys(value), 2);

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys(value[key])]));
  }
  return value;
}

// A line diff of two texts (longest common subsequence: args are small), as [sign, line] pairs.
export function diffLines(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push([" ", a[i]]);
      i += 1;
      j += 1;
    } else if (j >= b.length || (i < a.length && common[i + 1][j] >= common[i][j + 1])) {
      out.push(["-", a[i++]]);
    } else {
      out.push(["+", b[j++]]);
    }
  }
  return out;
}

// The diff drawn into `element`: removed lines red, added lines green.
export function drawDiff(element, before, after) {
  element.replaceChildren(
    ...diffLines(pretty(before), pretty(after)).map(([sign, line]) => {
      const row = document.createElement("span");
      row.className = sign === "-" ? "removed" : sign === "+" ? "added" : "same";
      row.textContent = `${sign} ${line}\n`;
      return row;
    }),
  );
}

export function timeLeft(expiresAt, now = Date.now()) {
  const end = Date.parse(expiresAt);
  if (Number.isNaN(end)) return { text: "no expiry", expired: false };
  if (end <= now) return { text: "expired", expired: true };
  let seconds = Math.floor((end - now) / 1000); // whole seconds left: "0s left" in the last one
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size || parts.length) parts.push(`${Math.floor(seconds / size)}${unit}`);
    seconds %= size;
  }
  parts.push(`${seconds}s`);
  return { text: `${parts.join(" ")} left`, expired: false };
}

const pad = (number) => String(number).padStart(2, "0");

// when an action was asked for, in the page's local time: "14:05" today, "2026-03-01 14:05" another day
export function localTime(createdAt, now = new Date()) {
  const at = new Date(createdAt);
  if (Number.isNaN(at.getTime())) return "";
  const clock = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  if (at.toDateString() === now.toDateString()) return clock;
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${clock}`;
}

// how long ago: "just now", "3 min ago", "2 h ago", "4 d ago"
export function ago(createdAt, now = Date.now()) {
  const at = Date.parse(createdAt);
  if (Number.isNaN(at)) return "";
  const seconds = Math.max(0, Math.floor((now - at) / 1000));
  if (seconds < 60) return "just now";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit} ago`;
  }
  return "just now";
}

// "Asked by author at 14:05 (3 min ago)": which agent asked, and when (the age is redrawn each second)
function asked(action) {
  const line = document.createElement("p");
  line.className = "asked";
  line.dataset.testid = "approval-asked";
  const agent = document.createElement("strong");
  agent.dataset.testid = "approval-agent";
  agent.textContent = visible(action.agent_name || "an agent");
  const when = document.createElement("time");
  when.dataset.testid = "approval-time";
  when.dateTime = action.created_at || "";
  when.title = action.created_at || "";
  when.textContent = localTime(action.created_at);
  const age = document.createElement("span");
  age.className = "age";
  age.dataset.testid = "approval-age";
  age.textContent = ago(action.created_at);
  line.append("Asked by ", agent, ...(when.textContent ? [" at ", when, " (", age, ")"] : []));
  return line;
}

// "1 of 2 approvals: ana": where the action's tool needs several approvals (or names its approvers)
function votes(action) {
  const line = document.createElement("p");
  line.className = "votes";
  line.dataset.testid = "approval-votes";
  const given = (action.votes || []).filter((vote) => vote.status === "submitted").map((vote) => vote.user_id);
  const required = action.approvals.required || 1;
  line.textContent = visible(`${given.length} of ${required} approvals${given.length ? `: ${given.join(", ")}` : ""}`);
  return line;
}

function envelope(action, status, extra) {
  return {
    action_id: action.action_id,
    kind: action.kind || "confirmation",
    request_id: crypto.randomUUID ? crypto.randomUUID() : uuid4(),
    status,
    payload: { tool: action.tool, args: action.args },
    args_sha256: action.args_sha256,
    ...extra,
  };
}

// crypto.randomUUID exists only in secure contexts; a page served over plain http elsewhere has this
export function uuid4() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The edited args, or why they cannot be sent (not JSON, not an object).
function parseEdit(text) {
  try {
    const value = JSON.parse(text);
    if (!value || typeof value !== "object" || Array.isArray(value)) return { error: "The args must be a JSON object." };
    return { value };
  } catch (error) {
    return { error: `Not valid JSON: ${error.message}` };
  }
}

// who may approve an action its requester may not (four eyes): "2 of ops", "one of ana, ops"
function approversOf(approvals) {
  const names = [...(approvals.users || []), ...(approvals.groups || [])];
  const required = approvals.required || 1;
  if (!names.length) return required > 1 ? `${required} other people` : "another person";
  return `${required > 1 ? required : "one"} of ${names.join(", ")}`;
}

// The owner's card of an action four eyes keep from them: who must approve it said instead of the buttons
// the stack would refuse (BEM-090); a rejection (withdrawing it) is still theirs.
function markFourEyes(node, action) {
  const note = node.querySelector(".blocked");
  note.textContent = visible(`Needs another person's approval: ${approversOf(action.approvals)} (you may still reject it).`);
  note.hidden = false;
  for (const selector of [".approve", ".edit", ".always"]) node.querySelector(selector).hidden = true;
}

// One card; `decide(action, response)` sends the resume and rejects with an ApiError on refusal.
// `canGrant`: the viewer owns the session, so a grantable action offers "Always allow in this session".
// `owner`: the viewer is the session's owner (the requester), so four eyes may keep the approval from them.
export function card(template, action, decide, { canGrant = false, owner = false } = {}) {
  const node = template.content.firstElementChild.cloneNode(true);
  const part = (selector) => node.querySelector(selector);
  node.dataset.actionId = action.action_id;
  node.dataset.expiresAt = action.expires_at || "";
  node.dataset.createdAt = action.created_at || "";
  part(".tool").textContent = visible(action.tool);
  node.querySelector("header").after(asked(action));
  if (action.approvals) node.querySelector(".asked").after(votes(action));
  part(".args").textContent = pretty(action.args);
  part("[data-testid=approval-hash]").textContent = visible(action.args_sha256 || "(none)");
  const warning = hiddenWarning(action.args);
  if (warning) {
    const note = document.createElement("p");
    note.className = "hidden-chars";
    note.dataset.testid = "approval-warning";
    note.setAttribute("role", "alert");
    note.textContent = warning;
    part(".args").before(note);
  }
  const problem = part(".problem");
  const editor = part(".editor");
  const edited = part(".edited");
  const invalid = part(".invalid");
  const rejecter = part(".rejecter");

  const send = async (response) => {
    problem.textContent = "";
    node.querySelectorAll("button").forEach((button) => (button.disabled = true));
    try {
      await decide(action, response);
      node.classList.add("decided");
    } catch (error) {
      problem.textContent = visible(error.message);
      if (error.status === 410) node.classList.add("expired"); // too late: nothing left to decide
      else node.querySelectorAll("button").forEach((button) => (button.disabled = false));
    }
  };
  const checkEdit = () => {
    const parsed = parseEdit(edited.value);
    invalid.textContent = visible(parsed.error || "");
    if (parsed.value) drawDiff(part(".diff"), action.args, parsed.value);
    return parsed;
  };
  part(".approve").addEventListener("click", () => send(envelope(action, "submitted")));
  part(".always").hidden = !(canGrant && action.grantable === true);
  part(".always").addEventListener("click", () => send(envelope(action, "submitted", { grant: "tool" })));
  part(".edit").addEventListener("click", () => {
    rejecter.hidden = true;
    editor.hidden = !editor.hidden;
    if (!editor.hidden && !edited.value) edited.value = pretty(action.args);
    checkEdit();
    edited.focus();
  });
  edited.addEventListener("input", checkEdit);
  part(".confirm-edit").addEventListener("click", () => {
    const parsed = checkEdit();
    if (parsed.value) send(envelope(action, "submitted", { edited_args: parsed.value }));
  });
  part(".reject").addEventListener("click", () => {
    editor.hidden = true;
    rejecter.hidden = !rejecter.hidden;
    part(".reason").focus();
  });
  part(".confirm-reject").addEventListener("click", () => {
    const reason = part(".reason").value.trim();
    send(envelope(action, "cancelled", reason ? { reason } : {}));
  });
  if (owner && action.approvals && action.approvals.self_approval === false) markFourEyes(node, action);
  return node;
}

// The countdowns and ages of every card, redrawn each second; an expired card keeps its place, marked.
export function tickCountdowns(container) {
  for (const node of container.querySelectorAll("[data-testid=approval]")) {
    const left = timeLeft(node.dataset.expiresAt);
    const countdown = node.querySelector(".countdown");
    if (countdown.textContent !== left.text) countdown.textContent = left.text;
    const age = node.querySelector(".age");
    const since = ago(node.dataset.createdAt);
    if (age && age.textContent !== since) age.textContent = since;
    node.classList.toggle("expired", left.expired);
  }
}
