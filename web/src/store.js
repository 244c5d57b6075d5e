// What the screens show, fetched from the API and kept current by the event stream
// (events.js). Screens read it with useStore and re-render when it changes.
import { useEffect, useState } from 'preact/hooks';
import { api, sandboxPath } from './api.js';

export const state = {
  /** GET /v1/sandboxes; null until loaded. */
  sandboxes: null,
  /** Sessions by sandbox name (running sandboxes only). */
  sessions: {},
  /** Why a sandbox's sessions could not be read, by sandbox name. */
  sessionErrors: {},
  /** GET /v1/net/denials, every sandbox's, newest last. */
  denials: [],
  /** Allow rules by sandbox name (GET /v1/net/rules?sandbox=NAME). */
  rules: {},
  /** Recorded syncs by sandbox name. */
  syncs: {},
  /** Runs of paddock's own agent by sandbox name (GET /v1/runs?sandbox=NAME), newest first. */
  runs: {},
  /** How updates arrive: "connecting", "live" (the event stream), "polling", "offline". */
  feed: 'connecting',
  /** Set when the daemon says this browser is not signed in. */
  signedOut: false,
  /** The last error loading the sandboxes, if the last try failed. */
  error: null,
};

const subscribers = new Set();
let pending = false;

/** Tells every screen to render again (once per task, however many changes). */
export function changed() {
  if (pending) return;
  pending = true;
  queueMicrotask(() => {
    pending = false;
    for (const f of subscribers) f();
  });
}

/** Returns the state, re-rendering the component whenever it changes. */
export function useStore() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const f = () => setTick((n) => n + 1);
    subscribers.add(f);
    return () => subscribers.delete(f);
  }, []);
  return state;
}

const running = new Map();

/**
 * Runs f, or, while a call with the same key runs, once more after it: a burst of
 * events costs two reads, not one each, and never two at once.
 */
function coalesce(key, f) {
  const cur = running.get(key);
  if (cur) {
    cur.again = true;
    return cur.done;
  }
  const entry = { again: false };
  entry.done = (async () => {
    try {
      do {
        entry.again = false;
        await f();
      } while (entry.again);
    } finally {
      running.delete(key);
    }
  })();
  running.set(key, entry);
  return entry.done;
}

export function refreshSandboxes() {
  return coalesce('sandboxes', async () => {
    try {
      const list = await api('GET', '/v1/sandboxes');
      state.sandboxes = list || [];
      state.error = null;
      changed();
      await Promise.all(state.sandboxes.map((sb) => refreshSessions(sb.name)));
    } catch (e) {
      state.error = e;
      changed();
    }
  });
}

/** Reads one sandbox's sessions; a sandbox that is not running has none to read. */
export function refreshSessions(name) {
  return coalesce('sessions:' + name, async () => {
    const sb = sandbox(name);
    if (sb && sb.state !== 'running') {
      delete state.sessions[name];
      delete state.sessionErrors[name];
      changed();
      return;
    }
    try {
      state.sessions[name] = (await api('GET', `${sandboxPath(name)}/sessions`)) || [];
      delete state.sessionErrors[name];
    } catch (e) {
      state.sessionErrors[name] = e.message;
    }
    changed();
    markUsable();
  });
}

/**
 * Marks the moment the first screen is whole, every running sandbox with its sessions:
 * what the browser tests report as time to usable.
 */
function markUsable() {
  if (performance.getEntriesByName('paddock-usable').length) return;
  const list = state.sandboxes || [];
  if (list.every((sb) => sb.state !== 'running' || state.sessions[sb.name] || state.sessionErrors[sb.name])) {
    performance.mark('paddock-usable');
  }
}

export async function refreshSandbox(name) {
  try {
    const info = await api('GET', sandboxPath(name));
    const list = state.sandboxes || [];
    const i = list.findIndex((s) => s.name === name);
    if (i >= 0) list[i] = info;
    else list.push(info);
    state.sandboxes = [...list];
    changed();
    await refreshSessions(name);
  } catch (e) {
    if (e.kind === 'not_found') {
      state.sandboxes = (state.sandboxes || []).filter((s) => s.name !== name);
      changed();
    }
  }
}

export function refreshDenials() {
  return coalesce('denials', loadDenials);
}

async function loadDenials() {
  try {
    state.denials = (await api('GET', '/v1/net/denials?limit=500')) || [];
    changed();
    const names = new Set(state.denials.map((d) => d.sandbox));
    await Promise.all([...names].map(refreshRules));
  } catch {
    // shown stale; the next event or poll tries again
  }
}

export async function refreshRules(name) {
  try {
    state.rules[name] = (await api('GET', `/v1/net/rules?sandbox=${encodeURIComponent(name)}`)) || [];
    changed();
  } catch {
    // as above
  }
}

export function refreshSyncs(name) {
  return refreshList(state.syncs, name, `${sandboxPath(name)}/syncs`);
}

export function refreshRuns(name) {
  return refreshList(state.runs, name, `/v1/runs?sandbox=${encodeURIComponent(name)}`);
}

const listLoads = new Map();

/**
 * Reads a sandbox's list that events keep fresh only once it is loaded (runs, syncs).
 * The list counts as loaded from the first read's start, so an event that comes while
 * that read is on its way reads it again; only the newest read's answer is kept.
 */
async function refreshList(lists, name, path) {
  if (!lists[name]) lists[name] = [];
  const n = (listLoads.get(path) ?? 0) + 1;
  listLoads.set(path, n);
  try {
    const list = (await api('GET', path)) || [];
    if (listLoads.get(path) !== n) return;
    lists[name] = list;
    changed();
  } catch {
    // as above
  }
}

export function refreshAll() {
  return Promise.all([refreshSandboxes(), refreshDenials()]);
}

export function sandbox(name) {
  return (state.sandboxes || []).find((s) => s.name === name);
}

export function session(sb, name) {
  return (state.sessions[sb] || []).find((s) => s.name === name);
}

/** Whether a rule of the sandbox lets host:port through now. */
export function allowed(rules, host, port) {
  return (rules || []).some((r) => {
    if (r.action !== 'allow') return false;
    let p = r.pattern.toLowerCase();
    const colon = p.lastIndexOf(':');
    if (colon > 0 && /^\d+$/.test(p.slice(colon + 1))) {
      if (Number(p.slice(colon + 1)) !== port) return false;
      p = p.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    } else if (port !== 80 && port !== 443) {
      return false; // a pattern without a port covers 80 and 443
    }
    const h = host.toLowerCase();
    return p === h || (p.startsWith('*.') && h.endsWith(p.slice(1)));
  });
}

/**
 * The sandbox's denials, one per host and port (the newest, with how many times it was
 * refused and when last), newest first, each with whether a rule allows it now.
 */
export function denialsOf(name) {
  const byKey = new Map();
  for (const d of state.denials) {
    if (d.sandbox !== name) continue;
    const k = `${d.host}:${d.port}`;
    const prev = byKey.get(k);
    const seen = d.last_seen || d.time;
    byKey.set(k, { ...d, seen, count: (prev ? prev.count : 0) + (d.count || 1) });
  }
  const rules = state.rules[name];
  return [...byKey.values()]
    .map((d) => ({ ...d, allowed: allowed(rules, d.host, d.port) }))
    .sort((a, b) => (a.seen < b.seen ? 1 : -1));
}
