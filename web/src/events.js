// Keeps the store current: the daemon's event stream (GET /v1/events as Server-Sent
// Events), which EventSource reconnects by itself, resuming after the last event seen.
// While the stream is down (or the daemon has none), the screens are polled instead.
import { changed, refreshAll, refreshDenials, refreshSandbox, refreshSessions, refreshRuns, refreshSyncs, state } from './store.js';

const POLL_MS = 4000;
const RETRY_MS = 15000;

const listeners = new Set();

/** Calls f with every event from the stream; returns a function that stops it. */
export function onEvent(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

const catchUps = new Set();

/**
 * Calls f when the page may have missed what no event will repeat: the stream came back
 * after being down, or the page is shown again. Returns a function that stops it.
 */
export function onCatchUp(f) {
  catchUps.add(f);
  return () => catchUps.delete(f);
}

function catchUp() {
  for (const f of catchUps) f();
}

/** Whether the stream was open once: an open after that is a reconnection. */
let opened = false;

let source = null;
/** The seq of the last event seen, to resume after. */
let lastSeq = null;
let pollTimer = null;
let retryTimer = null;

function setFeed(feed) {
  if (state.feed !== feed) {
    state.feed = feed;
    changed();
  }
}

function startPolling() {
  if (pollTimer) return;
  pollTimer = setInterval(() => {
    if (document.visibilityState === 'visible') refreshAll();
  }, POLL_MS);
}

function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
}

/** Opens the event stream (again). */
export function connect() {
  clearTimeout(retryTimer);
  if (source) source.close();
  setFeed('connecting');
  // The stream starts with what was recorded since the last event seen (or, the first
  // time, the last 10 seconds, which covers the page's own loading): nothing that
  // happened in between is missed. EventSource's own reconnections resume the same way
  // (Last-Event-ID).
  const since = lastSeq === null ? '10s' : String(lastSeq);
  const es = new EventSource('/v1/events?since=' + encodeURIComponent(since));
  source = es;
  es.onopen = () => {
    setFeed('live');
    stopPolling();
    if (opened) catchUp();
    opened = true;
  };
  es.onmessage = (m) => {
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return;
    }
    if (typeof ev.seq === 'number') lastSeq = ev.seq;
    handle(ev);
  };
  // The daemon's own "error" event (a reader too slow) comes as a MessageEvent; the
  // stream then closes and EventSource resumes after the last id. A failed connection
  // comes as a plain Event.
  es.onerror = () => {
    if (source !== es) return;
    startPolling();
    if (es.readyState === EventSource.CLOSED) {
      // Refused (signed out, no such route): try again later, poll meanwhile.
      setFeed(state.signedOut ? 'offline' : 'polling');
      retryTimer = setTimeout(connect, RETRY_MS);
    } else {
      setFeed('polling');
    }
  };
}

// A phone that slept may have a dead stream that still looks open: reconnect, and
// catch up, when the page is shown again.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState !== 'visible') return;
  if (!source || source.readyState === EventSource.CLOSED) {
    connect(); // which catches up once open
  } else {
    refreshAll();
    catchUp();
  }
});

const timers = new Map();

/** Runs f once, a moment after the last of a burst of calls with the same key. */
function soon(key, f, ms = 150) {
  clearTimeout(timers.get(key));
  timers.set(
    key,
    setTimeout(() => {
      timers.delete(key);
      f();
    }, ms),
  );
}

/** Runs f once, ms after the first of any number of calls within that time. */
function once(key, f, ms) {
  if (timers.has(key)) return;
  timers.set(
    key,
    setTimeout(() => {
      timers.delete(key);
      f();
    }, ms),
  );
}

function handle(ev) {
  const sb = ev.sandbox;
  switch (ev.kind) {
    case 'created':
    case 'started':
    case 'stopped':
    case 'suspended':
    case 'removed':
    case 'alarm':
    case 'alarms-cleared':
      soon('sb:' + sb, () => refreshSandbox(sb));
      break;
    case 'session-status': {
      // Shown at once from the event, then read back with the rest of the row.
      const s = (state.sessions[sb] || []).find((x) => x.name === ev.session);
      if (s && ev.attrs && ev.attrs.status) {
        s.status = ev.attrs.status;
        changed();
      }
      soon('sessions:' + sb, () => refreshSessions(sb));
      break;
    }
    case 'session-exited':
    case 'session-started':
    case 'session-restarted':
    case 'session-renamed':
    case 'session-removed':
      soon('sessions:' + sb, () => refreshSessions(sb));
      break;
    case 'usage':
    case 'budget-warning':
    case 'budget-spent':
      // A model call's cost: read back at most about once a second, however many calls.
      once('cost:' + sb, () => refreshSandbox(sb), 1000);
      once('cost-sessions:' + sb, () => refreshSessions(sb), 1000);
      break;
    case 'egress-denied':
      soon('denials', refreshDenials);
      break;
    case 'synced':
    case 'sync-failed':
      if (state.syncs[sb]) soon('syncs:' + sb, () => refreshSyncs(sb));
      break;
    case 'run-started':
    case 'run-tool':
    case 'run-finished':
      if (state.runs[sb]) soon('runs:' + sb, () => refreshRuns(sb));
      break;
  }
  for (const f of listeners) f(ev);
}
