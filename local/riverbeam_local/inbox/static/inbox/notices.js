// A decision confirmed on the page once the stack took it: approved (its tool runs now), rejected (with
// the reason), or a vote recorded short of the action's quorum (how many of how many, and whose).
// Text goes in with textContent only, hidden characters escaped.
import { visible } from "./display.js";

// what the stack's answer to a resume says of this decision (`ack`: a StreamAck, or 202 {pending: [...]})
export function decisionText(action, response, ack, who) {
  const tool = action.tool;
  if (response.status === "cancelled") return `Rejected ${tool} as ${who}${response.reason ? `: ${response.reason}` : ""}.`;
  const waiting = ((ack && ack.pending) || []).find((item) => item.action_id === action.action_id);
  if (waiting) {
    const names = (waiting.votes || []).filter((vote) => vote.status === "submitted").map((vote) => vote.user_id);
    const given = `${names.length} of ${waiting.required} approvals${names.length ? ` (${names.join(", ")})` : ""}`;
    return `Vote recorded for ${tool}: ${given}; it runs once ${waiting.required} approve.`;
  }
  const how = response.edited_args ? " with edited args" : "";
  return `Approved ${tool}${how} as ${who}${ack && ack.run_id ? ": it runs now" : ""}.`;
}

export function confirmDecision(element, action, response, ack, who) {
  element.textContent = visible(decisionText(action, response, ack, who));
}
