// Small pieces every screen uses. Everything shown from a sandbox goes through JSX text,
// which Preact sets as text: nothing a sandbox says becomes markup.
import { useState } from 'preact/hooks';
import { Link } from './router.jsx';
import { useStore } from './store.js';

const statusWords = {
  waiting: 'waiting for you',
  working: 'working',
  idle: 'idle',
  running: 'running',
  starting: 'starting',
  exited: 'exited',
  error: 'error',
};

/** A session's status, as a coloured badge; "waiting" stands out. */
export function Status({ status }) {
  return (
    <span class={`badge st-${status || 'unknown'}`} data-status={status}>
      {statusWords[status] || status || 'unknown'}
    </span>
  );
}

/** A sandbox's state. */
export function State({ state }) {
  return (
    <span class={`badge sb-${state}`} data-state={state}>
      {state}
    </span>
  );
}

/** "3 min ago" for a time, "" for none. */
export function ago(t) {
  if (!t) return '';
  const ms = Date.now() - new Date(t).getTime();
  if (!(ms >= 0)) return '';
  const s = Math.round(ms / 1000);
  if (s < 45) return 'just now';
  if (s < 90 * 60) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/**
 * What model calls cost, an estimate: "~$1.23" (as the CLI says it), "" for no calls,
 * "?" when no call had a known price.
 */
export function cost(u) {
  if (!u || !u.requests) return '';
  if (u.unpriced_requests === u.requests) return '?';
  if (u.cost_usd > 0 && u.cost_usd < 0.01) return '~<$0.01';
  return `~$${u.cost_usd.toFixed(2)}${u.unpriced_requests ? '+?' : ''}`;
}

/** A title for a cost: the figures behind the estimate. */
export function costTitle(u) {
  if (!u || !u.requests) return '';
  const tokensIn = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
  return `estimate: ${u.requests} model calls, ${tokensIn} tokens in, ${u.output_tokens} out`;
}

const feedWords = { live: 'live', polling: 'polling', connecting: 'connecting', offline: 'offline' };

/** The top bar: a back link, a title, and how updates arrive. */
export function Bar({ back, title, sub, children }) {
  const st = useStore();
  return (
    <header class="bar">
      {back ? (
        <Link class="back" href={back} aria-label="Back">
          ‹
        </Link>
      ) : (
        <img class="logo" src="/icon.svg" alt="" width="28" height="28" />
      )}
      <div class="title">
        <h1>{title}</h1>
        {sub && <div class="sub">{sub}</div>}
      </div>
      {children}
      <span class={`feed feed-${st.feed}`} title={`updates: ${feedWords[st.feed]}`} data-feed={st.feed}>
        {feedWords[st.feed]}
      </span>
    </header>
  );
}

/** A button that runs an async action, shows it is busy, and shows what went wrong. */
export function Action({ run, children, confirm: ask, class: cls = '', ...props }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const click = async () => {
    if (ask && !window.confirm(ask)) return;
    setBusy(true);
    setErr(null);
    try {
      await run();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={cls} disabled={busy} aria-busy={busy} onClick={click} {...props}>
        {children}
      </button>
      {err && <ErrorText err={err} />}
    </span>
  );
}

/** An API error: its message and hint. */
export function ErrorText({ err }) {
  if (!err) return null;
  return (
    <p class="error" role="alert">
      {err.message}
      {err.hint && <span class="hint"> {err.hint}</span>}
    </p>
  );
}
