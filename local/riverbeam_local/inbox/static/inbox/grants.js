// The session's standing grants ("always allow"): one line each, with what it covers and a Revoke button.
// A revoked grant's tool asks again from the agent's next call on. Text goes in with textContent only.
import { visible } from "./display.js";

function covers(grant) {
  if (grant.scope === "tool") return "any args";
  return `these args only (args_sha256 ${String(grant.args_sha256 || "").slice(0, 12)}…)`;
}

function line(grant, revoke) {
  const item = document.createElement("li");
  item.dataset.testid = "grant";
  item.dataset.grantId = grant.grant_id;
  const tool = document.createElement("code");
  tool.dataset.testid = "grant-tool";
  tool.textContent = visible(grant.tool);
  const button = document.createElement("button");
  button.type = "button";
  button.dataset.testid = "revoke-grant";
  button.textContent = "Revoke";
  button.addEventListener("click", async () => {
    button.disabled = true;
    await revoke(grant);
  });
  // a grant kept before grants were per agent names none: it covers nothing
  const agent = grant.agent_name ? `of ${grant.agent_name}` : "of no agent (covers nothing)";
  item.append(tool, visible(` ${agent}: ${covers(grant)}, granted by ${grant.created_by}`), " ", button);
  return item;
}

// Read the session's grants and draw them into `view.list` (`view.empty` shown where there are none).
export async function loadGrants(api, session, view, showError) {
  let grants = [];
  try {
    const page = await api.request("GET", `/sessions/${session}/grants`);
    grants = (page && page.grants) || [];
  } catch (error) {
    if (error.status !== 404) showError(error); // a new session has none yet
  }
  const revoke = async (grant) => {
    try {
      await api.request("DELETE", `/sessions/${session}/grants/${encodeURIComponent(grant.grant_id)}`);
    } catch (error) {
      if (error.status !== 404) showError(error); // revoked already (another tab): drawn again below
    }
    await loadGrants(api, session, view, showError);
  };
  // a line already drawn stays (its Revoke button may be being pressed): only revoked ones go, new ones come
  const kept = new Map([...view.list.children].map((node) => [node.dataset.grantId, node]));
  view.list.replaceChildren(...grants.map((grant) => kept.get(grant.grant_id) || line(grant, revoke)));
  view.empty.hidden = grants.length > 0;
}
