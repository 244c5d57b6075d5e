// A session's turns: its checkpoints, one taken each time its agent ended a turn (and by
// hand), oldest first, each with what it changed. Tap one for its diff; Rewind puts the
// session's files and conversation back to it (the state before is kept as a checkpoint,
// so a rewind to that undoes it); Fork makes a new sandbox from it, with the conversation.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, sandboxPath, sessionPath } from './api.js';
import { FileDiff, parseDiff } from './changes.jsx';
import { Tabs } from './conversation.jsx';
import { onCatchUp, onEvent } from './events.js';
import { Link, urls } from './router.jsx';
import { refreshAll, refreshSessions, sandbox, session, useStore } from './store.js';
import { Action, Bar, ErrorText, Status, ago } from './ui.jsx';

const enc = encodeURIComponent;

/** Reads a text answer of the API (a diff), throwing its error as api does. */
async function apiText(path) {
  let res;
  try {
    res = await fetch(path, { credentials: 'same-origin' });
  } catch (e) {
    throw new ApiError(0, 'network', `the daemon did not answer (${e.message})`);
  }
  const text = await res.text();
  if (!res.ok) {
    let e = {};
    try {
      e = JSON.parse(text).error || {};
    } catch {
      // not JSON
    }
    throw new ApiError(res.status, e.kind || 'http', e.message || `GET ${path}: HTTP ${res.status}`, e.hint);
  }
  return text;
}

/** Posts a long operation and reads its NDJSON progress to the end: the last line's answer. */
async function apiStream(path, body, onStep) {
  let res;
  try {
    res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'network', `the daemon did not answer (${e.message})`);
  }
  if (!res.ok) {
    let e = {};
    try {
      e = (await res.json()).error || {};
    } catch {
      // not JSON
    }
    throw new ApiError(res.status, e.kind || 'http', e.message || `POST ${path}: HTTP ${res.status}`, e.hint);
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let last = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!line) continue;
      const ev = JSON.parse(line);
      if (ev.step && onStep) onStep(ev.step);
      if (ev.done) last = ev;
    }
    if (done) break;
  }
  if (!last) throw new ApiError(0, 'network', 'the daemon ended the answer before it was done');
  if (last.error) {
    const e = last.error.error || last.error;
    throw new ApiError(0, e.kind || 'error', e.message || 'failed', e.hint);
  }
  return last;
}

/** A checkpoint's name for people: "turn 3", or "#12" with its name. */
export function label(cp) {
  if (cp.kind === 'turn' && cp.turn) return `turn ${cp.turn}`;
  return cp.name ? `#${cp.seq} ${cp.name}` : `#${cp.seq}`;
}

/** The checkpoint the session stands at: the newest, or the one the newest rewind went to. */
function current(cps) {
  if (!cps || cps.length === 0) return 0;
  const last = cps[cps.length - 1];
  return last.kind === 'rewind' && last.rewound_to ? last.rewound_to : last.seq;
}

export function Timeline({ sb, name }) {
  useStore();
  const s = session(sb, name);
  const [cps, setCps] = useState(null);
  const [err, setErr] = useState(null);
  const [note, setNote] = useState(null);
  useEffect(() => {
    let alive = true;
    const load = () =>
      api('GET', `${sandboxPath(sb)}/checkpoints?session=${enc(name)}`).then(
        (list) => alive && (setCps(list || []), setErr(null)),
        (e) => alive && setErr(e),
      );
    load();
    const off = onEvent((ev) => {
      if (ev.sandbox === sb && (ev.kind === 'checkpoint' || ev.kind === 'rewind')) load();
    });
    const offCatchUp = onCatchUp(load);
    return () => {
      alive = false;
      off();
      offCatchUp();
    };
  }, [sb, name]);
  const reload = async () => setCps((await api('GET', `${sandboxPath(sb)}/checkpoints?session=${enc(name)}`)) || []);
  const at = current(cps);
  return (
    <>
      <Bar back={urls.sandbox(sb)} title={name} sub={`${sb}${s ? ' · ' + s.agent : ''}`}>
        {s && <Status status={s.status} />}
      </Bar>
      <Tabs sb={sb} name={name} at="turns" />
      <main class="timeline">
        <ErrorText err={err} />
        {note && (
          <p class="small timeline-note" role="status">
            {note}
          </p>
        )}
        {!cps && !err && <p class="muted">Loading the turns…</p>}
        {cps && cps.length === 0 && (
          <p class="muted">
            No checkpoints yet: one is taken each time the agent ends a turn, or by hand with <code>paddock checkpoint {sb}</code>.
          </p>
        )}
        {cps && cps.length > 0 && (
          <ol class="rows turns">
            {cps
              .slice()
              .reverse()
              .map((cp) => (
                <Turn key={cp.seq} sb={sb} name={name} cp={cp} here={cp.seq === at} onNote={setNote} onDone={reload} />
              ))}
          </ol>
        )}
      </main>
    </>
  );
}

/** One checkpoint: its line, and once opened its diff and its buttons. */
function Turn({ sb, name, cp, here, onNote, onDone }) {
  const [diff, setDiff] = useState(null);
  const [err, setErr] = useState(null);
  const [forking, setForking] = useState(false);
  const load = async (open) => {
    if (!open || diff) return;
    try {
      const q = `session=${enc(name)}&to=${enc('#' + cp.seq)}`;
      const [stat, text] = await Promise.all([
        apiText(`${sandboxPath(sb)}/checkpoints/diff?${q}&stat=1`),
        apiText(`${sandboxPath(sb)}/checkpoints/diff?${q}`),
      ]);
      setDiff({ stat, files: parseDiff(text) });
    } catch (e) {
      setErr(e);
    }
  };
  const rewind = async () => {
    const r = await api('POST', `${sessionPath(sb, name)}/rewind`, { to: `#${cp.seq}` });
    onNote(
      `Rewound to ${label(r.to)}.` +
        (r.undo && r.undo.name ? ` The state before is checkpoint ${label(r.undo)}: rewind to it to undo this.` : '') +
        (r.fresh && r.note ? ` ${r.note}` : ''),
    );
    await Promise.all([onDone(), refreshSessions(sb)]);
  };
  let what = cp.prompt || '';
  if (cp.kind === 'rewind' && cp.rewound_to) what = `the state before the rewind to #${cp.rewound_to}`;
  else if (cp.kind === 'manual') what = `taken by hand${what ? ': ' + what : ''}`;
  return (
    <li class={`row turn${here ? ' here' : ''}`} data-seq={cp.seq} data-turn={cp.turn || ''} data-kind={cp.kind}>
      <details onToggle={(e) => load(e.currentTarget.open)}>
        <summary>
          <span class="name">{label(cp)}</span>
          {here && <span class="badge st-idle">now</span>} <span class="add">+{cp.added}</span> <span class="del">−{cp.deleted}</span>
          <div class="meta">
            {cp.files} file{cp.files === 1 ? '' : 's'} · {ago(cp.time)}
            {what ? ' · ' : ''}
            <span class="prompt-words">{what.length > 120 ? what.slice(0, 120) + '…' : what}</span>
          </div>
        </summary>
        <div class="buttons">
          {!here && (
            <Action
              class="small"
              run={rewind}
              data-act="rewind"
              confirm={`Rewind ${sb}/${name} to ${label(cp)}? Files and conversation go back; the agent is restarted there. The state now is kept as a checkpoint, so you can undo this.`}
            >
              Rewind here
            </Action>
          )}
          <button type="button" class="small" data-act="fork" onClick={() => setForking(!forking)}>
            Fork…
          </button>
        </div>
        {forking && <ForkForm sb={sb} name={name} cp={cp} onNote={onNote} onDone={() => setForking(false)} />}
        <ErrorText err={err} />
        {!diff && !err && <p class="muted small">Reading the diff…</p>}
        {diff && (
          <>
            <pre class="small stat">{diff.stat.trim() || 'No change to the files.'}</pre>
            {diff.files.map((f) => (
              <FileDiff key={f.path} f={f} />
            ))}
          </>
        )}
      </details>
    </li>
  );
}

/** The new sandbox's name and backend (the same as its parent's, or another here), and Fork. */
function ForkForm({ sb, name, cp, onNote, onDone }) {
  const [to, setTo] = useState(`${sb}-${cp.turn ? 'turn' + cp.turn : cp.seq}`);
  const [backend, setBackend] = useState('');
  const [backends, setBackends] = useState([]);
  const [step, setStep] = useState('');
  const own = sandbox(sb);
  useEffect(() => {
    api('GET', '/v1/doctor').then(
      (d) => setBackends((d.backends || []).filter((b) => b.available).map((b) => b.name)),
      () => setBackends([]),
    );
  }, []);
  const fork = async () => {
    setStep('');
    const body = { session: name, at: `#${cp.seq}`, new: to.trim() };
    if (backend) body.backend = backend;
    const last = await apiStream(`${sandboxPath(sb)}/fork`, body, setStep);
    const made = (last.fork && last.fork.sandboxes) || [to.trim()];
    onNote(
      <>
        Forked {label(cp)} into{' '}
        {made.map((n, i) => (
          <span key={n}>
            {i > 0 && ', '}
            <Link href={urls.sandbox(n)}>{n}</Link>
          </span>
        ))}
        , with its conversation.
      </>,
    );
    refreshAll();
    onDone();
  };
  return (
    <div class="form fork-form">
      <label>
        New sandbox
        <input
          name="fork-name"
          value={to}
          autocapitalize="off"
          autocomplete="off"
          spellcheck={false}
          onInput={(e) => setTo(e.currentTarget.value)}
        />
      </label>
      <label>
        Backend
        <select name="fork-backend" value={backend} onChange={(e) => setBackend(e.currentTarget.value)}>
          <option value="">{own ? `the same (${own.backend})` : 'the same'}</option>
          {backends
            .filter((b) => !own || b !== own.backend)
            .map((b) => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
        </select>
      </label>
      <div class="buttons">
        <Action class="primary small" run={fork} data-act="fork-go">
          Fork from {label(cp)}
        </Action>
      </div>
      {step && <p class="muted small">{step}</p>}
    </div>
  );
}
