// The dashboard's one connection to the daemon: JSON-RPC 2.0 over the gateway's WebSocket
// (SPEC §10, §20). Owns the socket, request ids and their timeouts, `initialize` with the
// session token (or the one-time login code), answering daemon requests
// (`elicitation/create`), and reconnecting after a drop. Views listen for `update`,
// `state` and `ready` (fired after every successful initialize, reconnects included).

const TOKEN_KEY = "zeroclaw.token";
const CALL_TIMEOUT_MS = 30_000;
const MAX_PENDING = 256;

export class AuthError extends Error {}

export class Rpc extends EventTarget {
  constructor() {
    super();
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.info = null;
    this.state = "idle";
    this.backoff = 500;
    this.stopped = false;
    this.requestHandlers = new Map();
  }

  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  /** Whether the connection may call `method` (its `capabilities`). */
  can(method) {
    return !!this.info && Array.isArray(this.info.capabilities) && this.info.capabilities.includes(method);
  }

  get admin() {
    return !!this.info?.principal?.admin;
  }

  /** Handles the daemon's request `method` with `fn(params) → result` (a promise). */
  onRequest(method, fn) {
    this.requestHandlers.set(method, fn);
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/rpc`;
  }

  setState(state, detail) {
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, detail } }));
  }

  /**
   * Opens the socket and initializes with `auth` ({authCode} or {authToken}); resolves
   * with the initialize result. An auth refusal rejects with AuthError and does not retry.
   */
  async connect(auth) {
    this.stopped = false;
    const ws = await this.open();
    performance.mark("zeroclaw:socket-open");
    const params = {
      protocolVersion: 1,
      clientInfo: { name: "zeroclaw-dashboard", version: "1" },
      clientCapabilities: { elicitation: {} },
      ...auth,
    };
    let result;
    try {
      result = await this.call("initialize", params);
    } catch (e) {
      this.stopped = true;
      ws.close();
      if (e && (e.code === -32010 || e.code === -32600 || e.code === -32012)) throw new AuthError(e.message);
      throw e;
    }
    if (result.authToken) this.token = result.authToken;
    else if (auth.authToken) this.token = auth.authToken;
    this.info = result;
    this.backoff = 500;
    performance.mark("zeroclaw:initialized");
    this.setState("online");
    this.dispatchEvent(new CustomEvent("ready", { detail: result }));
    return result;
  }

  open() {
    return new Promise((resolve, reject) => {
      this.setState("connecting");
      const ws = new WebSocket(this.url());
      this.ws = ws;
      let opened = false;
      ws.onopen = () => {
        opened = true;
        resolve(ws);
      };
      ws.onmessage = (ev) => this.receive(ev.data);
      ws.onclose = () => {
        if (this.ws !== ws) return;
        this.ws = null;
        this.failPending(new Error("connection closed"));
        if (!opened) reject(new Error("cannot reach the daemon"));
        this.setState("offline");
        this.scheduleReconnect();
      };
    });
  }

  scheduleReconnect() {
    if (this.stopped || !this.token || this.reconnectTimer) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, 5000);
    this.reconnectTimer = setTimeout(async () => {
      this.reconnectTimer = null;
      try {
        await this.connect({ authToken: this.token });
      } catch (e) {
        if (e instanceof AuthError) {
          this.token = null;
          this.dispatchEvent(new CustomEvent("loggedout", { detail: e.message }));
        } else {
          this.scheduleReconnect();
        }
      }
    }, wait);
  }

  /** Drops the socket now (the page reconnects by itself unless `stop`). */
  close(stop = true) {
    this.stopped = stop;
    if (this.ws) this.ws.close();
  }

  failPending(err) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(err);
    }
    this.pending.clear();
  }

  /** Calls `method`; resolves with its result, rejects with its JSON-RPC error. */
  call(method, params, timeoutMs = CALL_TIMEOUT_MS) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error("not connected"));
    }
    if (this.pending.size >= MAX_PENDING) return Promise.reject(new Error("too many calls in flight"));
    const id = this.nextId++;
    const frame = { jsonrpc: "2.0", id, method };
    if (params !== undefined) frame.params = params;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify(frame));
    });
  }

  receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (msg.method && msg.id !== undefined && msg.id !== null) {
      this.answerRequest(msg);
    } else if (msg.method) {
      if (msg.method === "session/update" && msg.params) {
        this.dispatchEvent(new CustomEvent("update", { detail: msg.params }));
      }
    } else if (msg.id !== undefined && this.pending.has(msg.id)) {
      const { resolve, reject, timer } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      clearTimeout(timer);
      if (msg.error) reject(msg.error);
      else resolve(msg.result);
    }
  }

  async answerRequest(msg) {
    const fn = this.requestHandlers.get(msg.method);
    const ws = this.ws;
    let reply;
    if (!fn) {
      reply = { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } };
    } else {
      try {
        reply = { jsonrpc: "2.0", id: msg.id, result: await fn(msg.params || {}) };
      } catch (e) {
        reply = { jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: String(e?.message || e) } };
      }
    }
    if (ws && ws === this.ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(reply));
  }
}

export const rpc = new Rpc();
