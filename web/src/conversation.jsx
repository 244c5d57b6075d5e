// A session's conversation, from its transcript: your messages, the agent's answers,
// each tool call folded with its result, and the files it changed. It reloads on the
// sandbox's events, every few seconds while the agent works, a few times over the
// seconds after the session's status changes (an agent's hooks report its turn over
// before it has written the turn's last lines), and when the event stream comes back or
// the page is shown again (events may have been lost meanwhile).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, sessionPath } from './api.js';
import { onCatchUp, onEvent } from './events.js';
import { Link, urls } from './router.jsx';
import { SessionActions } from './sandbox.jsx';
import { refreshSessions, session, useStore } from './store.js';
import { Bar, ErrorText, Status } from './ui.jsx';

/** When the transcript is read again after a status change, in ms from the change. */
const SETTLE_MS = [200, 1000, 2500, 5000, 10000];

export function Conversation({ sb, name }) {
  useStore();
  const s = session(sb, name);
  const [entries, setEntries] = useState(null);
  const [err, setErr] = useState(null);
  const list = useRef(null);
  const stick = useRef(true);
  const settleRef = useRef(null);

  useEffect(() => {
    let alive = true;
    let timer = null;
    const later = [];
    // Reads may answer out of order: an older read's answer never replaces a newer one's.
    let started = 0;
    let shown = 0;
    const load = async () => {
      const n = ++started;
      try {
        const e = await api('GET', `${sessionPath(sb, name)}/transcript`);
        if (alive && n > shown) {
          shown = n;
          setEntries(e || []);
          setErr(null);
        }
      } catch (e) {
        if (alive && n > shown) setErr(e);
      }
    };
    const soon = () => {
      clearTimeout(timer);
      timer = setTimeout(load, 200);
    };
    const settle = () => {
      later.splice(0).forEach(clearTimeout);
      for (const ms of SETTLE_MS) later.push(setTimeout(load, ms));
    };
    settleRef.current = settle;
    load();
    const off = onEvent((ev) => {
      if (ev.sandbox !== sb || (ev.session && ev.session !== name)) return;
      if (ev.kind === 'session-status') settle();
      else soon();
    });
    const offCatchUp = onCatchUp(load);
    const poll = setInterval(() => {
      const cur = session(sb, name);
      // A shell session has no transcript to poll for.
      if (document.visibilityState === 'visible' && cur && cur.agent !== 'shell' && (cur.status === 'working' || cur.status === 'running')) load();
    }, 3000);
    return () => {
      alive = false;
      off();
      offCatchUp();
      clearTimeout(timer);
      later.forEach(clearTimeout);
      clearInterval(poll);
      settleRef.current = null;
    };
  }, [sb, name]);

  // A status change the page learnt otherwise than by its event (a listing read after
  // the stream came back, or while polling) settles the transcript too.
  const status = s && s.status;
  const lastStatus = useRef(status);
  useEffect(() => {
    if (lastStatus.current && status && lastStatus.current !== status && settleRef.current) settleRef.current();
    lastStatus.current = status;
  }, [status]);

  // Keep the newest message in view, unless you scrolled up to read.
  useEffect(() => {
    const f = () => {
      stick.current = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
    };
    window.addEventListener('scroll', f, { passive: true });
    return () => window.removeEventListener('scroll', f);
  }, []);
  useLayoutEffect(() => {
    if (stick.current) window.scrollTo(0, document.documentElement.scrollHeight);
  }, [entries]);

  return (
    <>
      <Bar back={urls.sandbox(sb)} title={name} sub={`${sb}${s ? ' · ' + s.agent : ''}`}>
        {s && <Status status={s.status} />}
      </Bar>
      <Tabs sb={sb} name={name} at="chat" />
      <main class="chat" ref={list}>
        {s && s.status === 'exited' && <p class="muted">The agent's process exited{s.detail ? ` (${s.detail})` : ''}.</p>}
        {s && <SessionActions sb={sb} s={s} />}
        {err && err.kind === 'not_found' ? (
          <p class="muted">
            {err.message}. The <Link href={urls.terminal(sb, name)}>terminal</Link> shows the session as it is.
          </p>
        ) : (
          <ErrorText err={err} />
        )}
        {!entries && !err && <p class="muted">Loading the conversation…</p>}
        {entries && entries.length === 0 && <p class="muted">Nothing said yet.</p>}
        {entries && <Entries entries={entries} />}
      </main>
      <SendBox sb={sb} name={name} status={s && s.status} />
    </>
  );
}

/** The two views of a session. */
export function Tabs({ sb, name, at }) {
  return (
    <nav class="tabs">
      <Link class={at === 'chat' ? 'on' : ''} href={urls.session(sb, name)} aria-current={at === 'chat' ? 'page' : undefined}>
        Conversation
      </Link>
      <Link class={at === 'terminal' ? 'on' : ''} href={urls.terminal(sb, name)} aria-current={at === 'terminal' ? 'page' : undefined}>
        Terminal
      </Link>
      <Link class={at === 'turns' ? 'on' : ''} href={urls.turns(sb, name)} aria-current={at === 'turns' ? 'page' : undefined}>
        Turns
      </Link>
    </nav>
  );
}

/** Groups the transcript: a tool call takes its results and file changes along. */
function group(entries) {
  const calls = new Map();
  const out = [];
  for (const e of entries) {
    if (e.kind === 'tool_call') {
      const item = { kind: 'call', call: e, results: [], files: [] };
      if (e.call_id) calls.set(e.call_id, item);
      out.push(item);
      continue;
    }
    const owner = e.call_id && calls.get(e.call_id);
    if (owner && e.kind === 'tool_result') owner.results.push(e);
    else if (owner && e.kind === 'file_change') owner.files.push(e);
    else out.push({ kind: e.kind, entry: e });
  }
  return out;
}

function Entries({ entries }) {
  return (
    <ol class="entries">
      {group(entries).map((item, i) => {
        if (item.kind === 'call') return <ToolCall key={i} item={item} />;
        const e = item.entry;
        switch (e.kind) {
          case 'user':
            return (
              <li key={i} class="msg user">
                <div class="who">You</div>
                <div class="text">{e.text}</div>
              </li>
            );
          case 'assistant':
            return (
              <li key={i} class="msg assistant">
                <div class="who">Agent</div>
                <div class="text">{e.text}</div>
              </li>
            );
          case 'file_change':
            return (
              <li key={i} class="file">
                ✎ <span class="mono">{e.path}</span>
              </li>
            );
          default:
            return (
              <li key={i} class="tool">
                <details>
                  <summary>{e.tool || e.kind} result</summary>
                  <pre>{e.output || e.text}</pre>
                </details>
              </li>
            );
        }
      })}
    </ol>
  );
}

/** The input's gist for a folded call: a command, a path, a pattern. */
function gist(input) {
  if (input == null) return '';
  if (typeof input === 'string') return input;
  for (const k of ['command', 'cmd', 'file_path', 'path', 'pattern', 'url', 'query', 'description', 'prompt']) {
    const v = input[k];
    if (typeof v === 'string' && v) return v;
    if (Array.isArray(v) && v.length) return v.join(' ');
  }
  const first = Object.values(input).find((v) => typeof v === 'string');
  return first || JSON.stringify(input);
}

function ToolCall({ item }) {
  const { call, results, files } = item;
  const input = call.input;
  const line = gist(input).split('\n')[0];
  const done = results.length > 0;
  return (
    <li class="tool" data-tool={call.tool}>
      <details>
        <summary>
          <span class="tool-name">{call.tool}</span> <span class="mono gist">{line.length > 120 ? line.slice(0, 120) + '…' : line}</span>
          <span class={`mark ${done ? 'done' : 'pending'}`}>{done ? '✓' : '…'}</span>
        </summary>
        <pre class="input">{typeof input === 'string' ? input : JSON.stringify(input, null, 2)}</pre>
        {results.map((r, i) => (
          <pre key={i} class="output">
            {r.output || r.text || '(no output)'}
          </pre>
        ))}
      </details>
      {files.map((f, i) => (
        <div key={i} class="file">
          ✎ <span class="mono">{f.path}</span>
        </div>
      ))}
    </li>
  );
}

/** Types a message into the session's prompt and presses Enter (POST .../send). */
function SendBox({ sb, name, status }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const [sent, setSent] = useState(false);
  const box = useRef(null);
  const send = async (e) => {
    e && e.preventDefault();
    const t = text.trim();
    if (!t) return;
    setBusy(true);
    setErr(null);
    try {
      await api('POST', `${sessionPath(sb, name)}/send`, { text: t });
      setText('');
      setSent(true);
      setTimeout(() => setSent(false), 2500);
      refreshSessions(sb);
    } catch (e2) {
      setErr(e2);
    } finally {
      setBusy(false);
    }
  };
  const key = (e) => {
    // Enter sends on a keyboard; on a phone Enter makes a new line and the button sends.
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && matchMedia('(pointer: fine)').matches) send(e);
  };
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    el.style.height = 'auto';
    el.style.height = Math.min(el.scrollHeight, 160) + 'px';
  }, [text]);
  const gone = status === 'exited';
  return (
    <form class="sendbox" onSubmit={send}>
      <ErrorText err={err} />
      {sent && <p class="muted small">Sent.</p>}
      <div class="sendrow">
        <textarea
          ref={box}
          rows={1}
          name="message"
          placeholder={gone ? 'Restart the session to send it a message' : status === 'waiting' ? 'The agent is waiting for you…' : 'Message the agent'}
          value={text}
          disabled={gone}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={key}
        />
        <button type="submit" class="primary" disabled={busy || gone || !text.trim()} aria-busy={busy}>
          Send
        </button>
      </div>
    </form>
  );
}
