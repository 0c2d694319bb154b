"""Scripts the inbox page's tests run in the page: set before its own scripts (a deployment's config, a
socket that brings nothing, a tap to hand it frames), or run against its modules (the frame ordering)."""

# the page's own Runs (api.js) with a stub API: frames in frame_seq order and each once, a gap filled from
# the stored frames, a settled run's late notice shown once, an expiry notice shown once whatever its
# number, a frame with no run shown as it comes
ORDERING_SCRIPT = """
const done = arguments[arguments.length - 1];
import("/inbox/api.js").then(async ({ Runs }) => {
  const frame = (run, seq, type = "text_delta") => ({ run_id: run, frame_seq: seq, type });
  const stored = { a: [0, 1, 2, 3].map((seq) => frame("a", seq)) };
  const api = { all: async (path, key, after) => stored.a.filter((f) => f.frame_seq > after) };
  const shown = [];
  const runs = new Runs(api, (f) => shown.push(`${f.run_id || "-"}${f.frame_seq ?? ""}`));
  runs.add(frame("b", 0)); runs.add(frame("b", 2)); runs.add(frame("b", 1)); runs.add(frame("b", 1));
  runs.add(frame("a", 0)); runs.add(frame("a", 3));
  await runs.replay("a");
  runs.settle("c"); runs.add(frame("c", 7, "action_expired")); runs.add(frame("c", 7, "action_expired"));
  // a followed run's expiry notice numbered 0 (its frames had expired): shown once all the same
  runs.add(frame("d", 0)); runs.add(frame("d", 1, "done"));
  const expired = { ...frame("d", 0, "action_expired"), action_id: "x" };
  runs.add(expired); runs.add(expired); runs.add({ ...expired, frame_seq: 2 });
  runs.add({ type: "notice" });
  runs.stop();
  done(shown);
}).catch((error) => done(String(error)));
"""


# what a deployment's config.js says for AuthMode jwt, set before the page's scripts run; fetch and WebSocket
# wrapped to see what the page sends
JWT_DEPLOYMENT = """
window.RIVERBEAM_CONFIG = { auth: "jwt" };
window.seen = { fetches: [], sockets: [] };
const realFetch = window.fetch;
window.fetch = (url, init = {}) => {
  window.seen.fetches.push({ url: String(url), authorization: (init.headers || {}).authorization || null });
  return realFetch(url, init);
};
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  constructor(url, ...rest) {
    window.seen.sockets.push(String(url));
    super(url, ...rest);
  }
};
"""


# a socket that connects and brings nothing (a proxy that drops frames, say): set before the page's scripts
MUTE_SOCKET = """
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  set onmessage(_) {}
  get onmessage() { return null; }
};
"""


# a tap on the page's socket and reads: frames handed to the page as if the socket brought them
SOCKET_TAP = """
window.sockets = [];
window.inboxReads = 0;
const realFetch = window.fetch;
window.fetch = (url, init) => {
  if (String(url).includes("/actions?")) window.inboxReads += 1;
  return realFetch(url, init);
};
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  constructor(...args) {
    super(...args);
    window.sockets.push(this);
  }
};
window.bring = (frame) => {
  const message = new MessageEvent("message", { data: JSON.stringify(frame) });
  window.sockets[window.sockets.length - 1].dispatchEvent(message);
};
"""
