// The page's side of Riverbeam's API (CONTRACT sections 2, 4, 5): settings, who the caller is, HTTP
// requests whose refusals become ApiError, the session's WebSocket, and each run's frames in order.

const SECRET_KEY = "riverbeam.secret";

// The local stack's secret: `riverbeam dev` prints the page's URL with it in the fragment (#secret=, which
// a browser never sends). Taken from there once, then off the address bar (history, bookmarks, a shared
// screen) and kept for this tab alone. A deployment has none.
function stackSecret() {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const given = fragment.get("secret");
  if (given) {
    sessionStorage.setItem(SECRET_KEY, given);
    fragment.delete("secret");
    const url = new URL(window.location.href);
    url.hash = fragment.toString();
    window.history.replaceState(null, "", url);
  }
  return sessionStorage.getItem(SECRET_KEY);
}

const given = window.RIVERBEAM_CONFIG || {};
const origin = window.location;
export const settings = {
  apiUrl: (given.apiUrl || `${origin.origin}/`).replace(/\/+$/, ""),
  wsUrl: given.wsUrl || `${origin.protocol === "https:" ? "wss" : "ws"}://${origin.host}/ws`,
  auth: given.auth === "jwt" ? "jwt" : "none",
  agent: given.agent || "author",
  getToken: typeof given.getToken === "function" ? given.getToken : null,
  secret: stackSecret(),
};

// reconnect delays (ms): the last one repeats
const BACKOFF = [200, 500, 1000, 2000, 4000, 5000];
// a followed run with no new frame for this long has its stored frames read (the socket may have lost some)
const IDLE_MS = 2000;
// a followed run with no progress at all for this long is given up
const GIVE_UP_MS = 10 * 60 * 1000;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.detail = message;
  }
}

// The caller as the deployment's AuthMode wants it told (CONTRACT 3.8): with `none`, the body's auth_context
// and the user_id query parameter (and the local stack's secret: a bearer header, ?secret= on the WebSocket);
// with `jwt`, a bearer token on HTTP and ?token= on the WebSocket (browsers cannot set a WebSocket's
// headers). `who()` gives {user, token, groups} from the page's fields (groups: AuthMode none only; a
// token carries its own).
export async function credentials(who) {
  const { user, token, groups = [] } = who();
  if (settings.auth === "jwt") {
    const bearer = settings.getToken ? await settings.getToken() : token;
    if (!bearer) throw new ApiError(0, "no token", "enter a token (the deployment's AuthMode is jwt)");
    return { headers: { authorization: `Bearer ${bearer}` }, query: {}, body: {}, socket: { token: bearer } };
  }
  if (!user) throw new ApiError(0, "no user id", "enter a user id first");
  const secret = settings.secret;
  return {
    headers: secret ? { authorization: `Bearer ${secret}` } : {},
    query: groups.length ? { user_id: user, groups: groups.join(",") } : { user_id: user },
    body: { auth_context: groups.length ? { user_id: user, groups } : { user_id: user } },
    socket: secret ? { user_id: user, secret } : { user_id: user },
  };
}

export class Api {
  constructor(who) {
    this.who = who;
  }

  async request(method, path, { body, query } = {}) {
    const id = await credentials(this.who);
    const url = new URL(settings.apiUrl + path);
    // the identity goes in the query of a read, in the body of an invoke or resume
    for (const [key, value] of Object.entries({ ...(body ? {} : id.query), ...query })) {
      if (value !== undefined && value !== null) url.searchParams.set(key, value);
    }
    const init = { method, headers: { ...id.headers } };
    if (body) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify({ ...body, ...id.body });
    }
    let answer;
    try {
      answer = await fetch(url, init);
    } catch (error) {
      throw new ApiError(0, "unreachable", `cannot reach ${settings.apiUrl} (${error.message})`);
    }
    const text = await answer.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { message: text.slice(0, 500) };
    }
    if (!answer.ok) {
      const error = (data && data.error) || {};
      throw new ApiError(answer.status, error.code || `HTTP ${answer.status}`, error.message || (data && data.message) || answer.statusText);
    }
    return data;
  }

  // every page of a listing (`key`: its array), from `after` on
  async all(path, key, after, query = {}) {
    const found = [];
    for (;;) {
      const page = await this.request("GET", path, { query: { ...query, after } });
      found.push(...((page && page[key]) || []));
      if (!page || page.next_after === null || page.next_after === undefined) return found;
      after = page.next_after;
    }
  }

  async socketUrl(sessionId) {
    const id = await credentials(this.who);
    const url = new URL(settings.wsUrl);
    for (const [key, value] of Object.entries({ session_id: sessionId, ...id.socket })) url.searchParams.set(key, value);
    return url.toString();
  }
}

// The session's frames: one WebSocket, opened again after a drop (bounded backoff).
export class Subscription {
  constructor(api, sessionId, onFrame, onState) {
    Object.assign(this, { api, sessionId, onFrame, onState, attempt: 0, closed: false, socket: null });
  }

  async open() {
    let url;
    try {
      url = await this.api.socketUrl(this.sessionId);
    } catch (error) {
      this.onState("not connected", error);
      return;
    }
    if (this.closed) return;
    const socket = (this.socket = new WebSocket(url));
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.onState("connected");
    };
    socket.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return; // not JSON: nothing a page can show
      }
      if (frame && typeof frame === "object") this.onFrame(frame);
    };
    socket.onclose = () => {
      if (this.closed || socket !== this.socket) return;
      // a browser is not told why a WebSocket was refused: said once, then tried again and again
      const refused = !opened && this.attempt === 0;
      this.onState("reconnecting", refused ? new ApiError(0, "not subscribed", "the session's frames cannot be subscribed to (not your session, or the server is down); retrying") : undefined);
      const delay = BACKOFF[Math.min(this.attempt++, BACKOFF.length - 1)];
      setTimeout(() => this.open(), delay);
    };
  }

  close() {
    this.closed = true;
    if (this.socket) this.socket.close();
  }
}

// Each run's frames shown in frame_seq order and each once, whether they came on the socket or were read
// back (GET /runs/{id}/frames?after=N); a frame with no run (a session notice) is shown as it comes.
export class Runs {
  constructor(api, show) {
    Object.assign(this, { api, show, runs: new Map(), notices: new Set() });
    this.timer = setInterval(() => this.tick(), 500);
  }

  follow(runId, after = -1) {
    if (!this.runs.has(runId)) {
      const now = Date.now();
      this.runs.set(runId, { next: after + 1, early: new Map(), done: false, busy: false, seen: now, moved: now });
    }
    return this.runs.get(runId);
  }

  // a run already shown from the stored messages: a later frame of it (an expiry notice, numbered after its
  // `done`) is shown as it comes, and its earlier frames are never replayed
  settle(runId) {
    if (!this.runs.has(runId)) this.runs.set(runId, { settled: true, done: true, shown: new Set() });
  }

  add(frame) {
    // an expiry notice is no part of the run's stream: shown once whatever its number (the run's earlier
    // frames may have expired before it was numbered); it still moves the run's count past it
    const notice = frame.type === "action_expired";
    if (notice) this.notice(frame);
    const { run_id: runId, frame_seq: seq } = frame;
    if (typeof runId !== "string" || !runId || !Number.isInteger(seq)) return notice ? undefined : this.show(frame);
    const run = this.follow(runId);
    if (run.settled) {
      if (!run.shown.has(seq) && !notice) this.show(frame);
      run.shown.add(seq);
      return;
    }
    if (seq < run.next || run.early.has(seq)) return; // seen already
    run.early.set(seq, frame);
    while (run.early.has(run.next)) {
      const next = run.early.get(run.next);
      run.early.delete(run.next);
      run.next += 1;
      run.seen = run.moved = Date.now();
      if (next.type === "done") run.done = true;
      if (next.type !== "action_expired") this.show(next);
    }
  }

  notice(frame) {
    const key = typeof frame.action_id === "string" ? frame.action_id : `${frame.run_id}:${frame.frame_seq}`;
    if (this.notices.has(key)) return;
    this.notices.add(key);
    this.show(frame);
  }

  async replay(runId) {
    const run = this.follow(runId);
    if (run.done || run.busy) return;
    run.busy = true;
    try {
      const frames = await this.api.all(`/runs/${encodeURIComponent(runId)}/frames`, "frames", run.next - 1);
      frames.forEach((frame) => this.add(frame));
    } catch {
      // not stored yet (a queued run) or out of reach: the next tick tries again
    } finally {
      run.busy = false;
      run.seen = Date.now();
    }
  }

  // after a reconnect: whatever the socket was not there for
  replayAll() {
    for (const [runId, run] of this.runs) if (!run.done) this.replay(runId);
  }

  tick() {
    const now = Date.now();
    for (const [runId, run] of this.runs) {
      if (run.done || now - run.moved > GIVE_UP_MS) continue;
      if (now - run.seen > IDLE_MS) this.replay(runId);
    }
  }

  stop() {
    clearInterval(this.timer);
  }
}
