// The daemon's API (docs/api.md), as this page's origin serves it. The browser's session
// cookie goes with every request; the daemon checks it and the Origin.

/** An error the API answered ({"error": {kind, message, hint}}) or a failed request. */
export class ApiError extends Error {
  constructor(status, kind, message, hint) {
    super(message);
    this.status = status;
    this.kind = kind;
    this.hint = hint || '';
  }
}

let unauthorized = () => {};

/** Sets what to do when the daemon says this browser is not signed in (401). */
export function onUnauthorized(f) {
  unauthorized = f;
}

/** Calls the API and returns its JSON answer (null for 204). */
export async function api(method, path, body) {
  const opts = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    throw new ApiError(0, 'network', `the daemon did not answer (${e.message})`);
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    if (res.status === 401) unauthorized();
    throw new ApiError(res.status, e.kind || 'http', e.message || `${method} ${path}: HTTP ${res.status}`, e.hint);
  }
  return data;
}

const enc = encodeURIComponent;

export const sandboxPath = (sb) => `/v1/sandboxes/${enc(sb)}`;
export const sessionPath = (sb, name) => `${sandboxPath(sb)}/sessions/${enc(name)}`;

/** Where the exec WebSocket of a sandbox is, for this page's origin. */
export function execURL(sb) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${sandboxPath(sb)}/exec`;
}

/** The tmux socket paddock runs every session's tmux server on (session.Socket). */
export const tmuxSocket = '/run/paddock/tmux.sock';

/** The command that attaches a terminal to a session, as `paddock chat` runs it (session.AttachArgv). */
export const attachArgv = (name) => ['tmux', '-S', tmuxSocket, 'attach-session', '-t', '=' + name];

/**
 * Runs argv in a sandbox over the exec WebSocket and collects its output, up to limit bytes
 * of each stream: {code, stdout, stderr, truncated}.
 */
export function run(sb, argv, { dir, limit = 4 << 20 } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(execURL(sb));
    ws.binaryType = 'arraybuffer';
    const out = { 1: [], 2: [] };
    const size = { 1: 0, 2: 0 };
    let exit = null;
    let truncated = false;
    ws.onopen = () => ws.send(JSON.stringify({ argv, dir }));
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') {
        try {
          const c = JSON.parse(e.data);
          if (c.type === 'exit') exit = c;
        } catch {
          // not a control message: ignored
        }
        return;
      }
      const b = new Uint8Array(e.data);
      const s = b[0];
      if (s !== 1 && s !== 2) return;
      if (size[s] + b.length - 1 > limit) {
        truncated = true;
        return;
      }
      out[s].push(b.subarray(1));
      size[s] += b.length - 1;
    };
    ws.onclose = () => {
      if (!exit) {
        reject(new ApiError(0, 'network', `running ${argv[0]} in ${sb} failed: the connection closed`));
        return;
      }
      const text = (parts) => new TextDecoder().decode(concat(parts));
      if (exit.error && exit.code === 127) {
        reject(new ApiError(0, 'exec', exit.error));
        return;
      }
      resolve({ code: exit.code, error: exit.error || '', stdout: text(out[1]), stderr: text(out[2]), truncated });
    };
  });
}

function concat(parts) {
  const n = parts.reduce((a, p) => a + p.length, 0);
  const b = new Uint8Array(n);
  let i = 0;
  for (const p of parts) {
    b.set(p, i);
    i += p.length;
  }
  return b;
}
