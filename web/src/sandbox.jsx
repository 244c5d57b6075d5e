// One sandbox: start and stop it, its sessions (new, restart, end), the hosts its
// network refused (allowed with one tap) and how its work gets synced.
import { useEffect, useState } from 'preact/hooks';
import { api, sandboxPath, sessionPath } from './api.js';
import { SessionRow } from './home.jsx';
import { Link, navigate, urls } from './router.jsx';
import { denialsOf, refreshDenials, refreshRules, refreshRuns, refreshSandbox, refreshSessions, refreshSyncs, sandbox, useStore } from './store.js';
import { Action, Bar, ErrorText, State, ago, cost, costTitle } from './ui.jsx';
import { onEvent } from './events.js';
import { Learn } from './learn.jsx';

export function Sandbox({ sb: name }) {
  const st = useStore();
  const sb = sandbox(name);
  useEffect(() => {
    refreshRules(name);
    refreshSyncs(name);
    refreshRuns(name);
    refreshDenials();
  }, [name]);
  useEffect(() => {
    if (location.hash === '#network') document.getElementById('network')?.scrollIntoView();
  }, []);
  if (!sb) {
    return (
      <>
        <Bar back={urls.home()} title={name} />
        <main>{st.sandboxes ? <p class="error">There is no sandbox named {name}.</p> : <p class="muted">Loading…</p>}</main>
      </>
    );
  }
  const running = sb.state === 'running';
  const sessions = st.sessions[name] || [];
  const lifecycle = (verb) => async () => {
    await api('POST', `${sandboxPath(name)}/${verb}`);
    await refreshSandbox(name);
  };
  return (
    <>
      <Bar back={urls.home()} title={name} sub={<State state={sb.state} />} />
      <main>
        <section class="card">
          <div class="meta">
            {sb.backend}
            {sb.runtime ? ` (${sb.runtime})` : ''} · network {sb.network}
            {sb.source_path ? ` · ${sb.source_path}` : sb.source_url ? ` · ${sb.source_url}` : ''}
            {cost(sb.usage) && (
              <>
                <span class="cost">
                  {' · '}
                  {cost(sb.usage)}
                </span>{' '}
                ({costTitle(sb.usage)})
              </>
            )}
          </div>
          {sb.detail && <p class="error">{sb.detail}</p>}
          <div class="buttons">
            {running ? (
              <Action run={lifecycle('stop')} confirm={`Stop ${name}? Every process in it ends; its files stay.`}>
                Stop sandbox
              </Action>
            ) : (
              <Action class="primary" run={lifecycle('start')}>
                Start sandbox
              </Action>
            )}
            <Link class="button" href={urls.changes(name)}>
              Changes
            </Link>
          </div>
        </section>

        <section class="card" aria-label="Sessions">
          <h2>Sessions</h2>
          {!running && <p class="muted">Start the sandbox to see and start its sessions.</p>}
          {running && st.sessionErrors[name] && <p class="error">{st.sessionErrors[name]}</p>}
          {running && sessions.length === 0 && <p class="muted">No sessions yet.</p>}
          <ul class="rows">
            {sessions.map((s) => (
              <SessionRow key={s.name} s={s} />
            ))}
          </ul>
          {running && <NewSession sb={name} />}
        </section>

        <Runs sb={name} />
        {running && <Ports sb={name} />}
        <Network sb={name} />
        <Learn sb={name} network={sb.network} />
        <Sync sb={sb} />
      </main>
    </>
  );
}

/**
 * The form that starts a session: a name, an agent, and its first prompt (the agent
 * starts working on it at once), or for a shell session its command.
 */
function NewSession({ sb }) {
  const [open, setOpen] = useState(false);
  const [agents, setAgents] = useState(null);
  const [agent, setAgent] = useState('claude');
  const [name, setName] = useState('');
  const [command, setCommand] = useState('');
  const [prompt, setPrompt] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  useEffect(() => {
    if (!open || agents) return;
    api('GET', '/v1/doctor')
      .then((d) => {
        const list = (d.agents || []).filter((a) => a.available).map((a) => a.name);
        setAgents(list);
        if (!list.includes(agent) && list.length) setAgent(list[0]);
      })
      .catch(() => setAgents(['claude', 'codex', 'shell']));
  }, [open]);
  if (!open) {
    return (
      <div class="buttons">
        <button type="button" class="primary" onClick={() => setOpen(true)}>
          New session
        </button>
      </div>
    );
  }
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      const body = { name: name.trim() || agent, agent };
      if (agent === 'shell' && command.trim()) body.command = command.trim();
      if (agent !== 'shell' && prompt.trim()) body.prompt = prompt.trim();
      const info = await api('POST', `${sandboxPath(sb)}/sessions`, body);
      await refreshSessions(sb);
      navigate(urls.session(sb, info.name));
    } catch (e2) {
      setErr(e2);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="form" onSubmit={submit}>
      <label>
        Name
        <input
          name="name"
          value={name}
          placeholder={agent}
          autocapitalize="off"
          autocomplete="off"
          spellcheck={false}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <label>
        Agent
        <select name="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          {(agents || [agent]).map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </label>
      {agent !== 'shell' && (
        <label>
          First prompt
          <textarea
            name="prompt"
            rows={3}
            value={prompt}
            placeholder="Optional: what the agent starts working on at once"
            onInput={(e) => setPrompt(e.currentTarget.value)}
          />
        </label>
      )}
      {agent === 'shell' && (
        <label>
          Command
          <input
            name="command"
            value={command}
            placeholder="bash"
            autocapitalize="off"
            spellcheck={false}
            onInput={(e) => setCommand(e.currentTarget.value)}
          />
        </label>
      )}
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
          {busy ? 'Starting…' : 'Start session'}
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
      <ErrorText err={err} />
    </form>
  );
}

/** Is this page on the daemon's own machine, where *.localhost reaches it? */
function onLoopback() {
  const h = location.hostname;
  return h === 'localhost' || h === '127.0.0.1' || h === '[::1]' || h === '::1';
}

/**
 * Ports listening inside the sandbox, read again when one opens or closes; each opens
 * its preview: its own origin (http://PORT-SANDBOX.localhost) on the daemon's machine,
 * the path form (/preview/SANDBOX/PORT/) elsewhere, as a phone cannot reach *.localhost.
 */
function Ports({ sb }) {
  const [ports, setPorts] = useState(null);
  const [err, setErr] = useState(null);
  useEffect(() => {
    let live = true;
    const load = () =>
      api('GET', `${sandboxPath(sb)}/ports`).then(
        (p) => live && (setPorts(p || []), setErr(null)),
        (e) => live && setErr(e),
      );
    load();
    const off = onEvent((ev) => {
      if (ev.sandbox === sb && (ev.kind === 'port-open' || ev.kind === 'port-closed' || ev.kind === 'started')) load();
    });
    return () => {
      live = false;
      off();
    };
  }, [sb]);
  const open = (p) => async () => {
    // The window opens at once (a phone allows a popup only on the tap itself), then
    // goes to the link the daemon makes.
    const win = window.open('about:blank', '_blank');
    try {
      const { url } = await api('POST', `${sandboxPath(sb)}/ports/${p.port}/open${onLoopback() && p.url ? '' : '?form=path'}`);
      if (win) win.location = url;
      else location.href = url;
    } catch (e) {
      if (win) win.close();
      throw e;
    }
  };
  return (
    <section class="card" id="ports" aria-label="Ports">
      <h2>Ports</h2>
      <ErrorText err={err} />
      {ports && ports.length === 0 && <p class="muted">Nothing listens in this sandbox. A server an agent starts shows here.</p>}
      <ul class="rows">
        {(ports || []).map((p) => (
          <li class="row port" key={p.port} data-port={p.port}>
            <span class="row-main">
              <span class="name">{p.port}</span>
              <span class="muted small">
                {p.process || 'a process'} on {p.address}
              </span>
            </span>
            <Action class="small" run={open(p)} aria-label={`Open port ${p.port}`}>
              Open
            </Action>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Hosts the egress proxy refused, newest first; Allow adds a rule for this sandbox. */
function Network({ sb }) {
  const st = useStore();
  const list = denialsOf(sb);
  const allow = (d) => async () => {
    await api('POST', `/v1/net/denials/${d.id}/allow`);
    await refreshRules(sb);
  };
  return (
    <section class="card" id="network" aria-label="Network">
      <h2>Blocked hosts</h2>
      {st.sandboxes && sandbox(sb)?.network === 'open' && <p class="muted">This sandbox's network is open: nothing is blocked.</p>}
      {list.length === 0 && <p class="muted">Nothing was refused.</p>}
      <ul class="rows">
        {list.map((d) => (
          <li class="row denial" key={d.host + ':' + d.port} data-host={d.host}>
            <span class="row-main">
              <span class="name">
                {d.host}
                {d.port === 443 || d.port === 80 ? '' : `:${d.port}`}
              </span>
              <span class="muted small">
                {d.reason} · {ago(d.seen)}
                {d.count > 1 ? ` · ${d.count} times` : ''}
              </span>
            </span>
            {d.allowed ? (
              <span class="badge allowed">allowed</span>
            ) : (
              <Action class="primary small" run={allow(d)} aria-label={`Allow ${d.host}`}>
                Allow
              </Action>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

const modeWords = {
  manual: ['manual', 'when you run paddock sync on the host'],
  'on-commit': ['on commit', 'the daemon syncs whenever a branch moves'],
  'on-idle': ['on idle', 'the daemon syncs whenever an agent finishes a turn'],
};

/**
 * How the sandbox's work reaches its host repository. A sync runs host git next to the
 * repository (the CLI, or the daemon in the automatic modes), so the page sets the mode
 * and shows what was synced rather than syncing itself.
 */
function Sync({ sb }) {
  const st = useStore();
  const syncs = st.syncs[sb.name] || [];
  const [err, setErr] = useState(null);
  const setMode = async (e) => {
    const mode = e.currentTarget.value;
    setErr(null);
    try {
      await api('PUT', `${sandboxPath(sb.name)}/sync-mode`, { mode });
      await refreshSandbox(sb.name);
    } catch (e2) {
      setErr(e2);
    }
  };
  const last = syncs.slice(-5).reverse();
  return (
    <section class="card" aria-label="Sync">
      <h2>Sync</h2>
      <label class="inline">
        Mode
        <select value={sb.sync_mode || 'manual'} onChange={setMode} disabled={!sb.source_path}>
          {Object.keys(modeWords).map((m) => (
            <option key={m} value={m}>
              {modeWords[m][0]}
            </option>
          ))}
        </select>
      </label>
      <p class="muted small">Syncs {(modeWords[sb.sync_mode] || modeWords.manual)[1]}.</p>
      <ErrorText err={err} />
      <p class="muted small">
        A sync runs git next to your repository, on the daemon's host: <code>paddock sync {sb.name}</code> there, or an
        automatic mode. <Link href={urls.changes(sb.name)}>Changes</Link> shows the work as it is now.
      </p>
      {last.length === 0 && <p class="muted">Not synced yet.</p>}
      <ul class="rows">
        {last.map((r, i) => (
          <SyncRow key={i} r={r} />
        ))}
      </ul>
    </section>
  );
}

function SyncRow({ r }) {
  const res = r.result || {};
  const updates = res.updates || [];
  return (
    <li class="row sync">
      <details>
        <summary>
          {ago(r.time)} · {res.mode || 'manual'} · {updates.length ? `${updates.length} ref${updates.length === 1 ? '' : 's'}` : 'nothing new'}
        </summary>
        {updates.map((u) => (
          <div class="sync-ref" key={u.ref}>
            <div class="name">{u.ref}</div>
            {(u.commits || []).map((c) => (
              <div class="mono small" key={c}>
                {c}
              </div>
            ))}
            {(u.files || []).map((f) => (
              <div class="mono small muted" key={f}>
                {f.replace('\t', ' ')}
              </div>
            ))}
          </div>
        ))}
      </details>
    </li>
  );
}

/** The buttons of one session: restart once exited, end. */
export function SessionActions({ sb, s }) {
  const restart = async () => {
    await api('POST', `${sessionPath(sb, s.name)}/restart`);
    await refreshSessions(sb);
  };
  const end = async () => {
    await api('DELETE', sessionPath(sb, s.name));
    await refreshSessions(sb);
    navigate(urls.sandbox(sb));
  };
  return (
    <div class="buttons">
      {s.status === 'exited' && (
        <Action class="primary small" run={restart}>
          Restart
        </Action>
      )}
      <Action class="small" run={end} confirm={`End session ${s.name}? Its process is killed and paddock forgets it.`}>
        End session
      </Action>
    </div>
  );
}

/** The runs of paddock's own agent on a sandbox (paddock run): live, each with its steps. */
function Runs({ sb }) {
  const st = useStore();
  const list = st.runs[sb] || [];
  if (list.length === 0) return null;
  return (
    <section class="card" aria-label="Runs">
      <h2>Runs</h2>
      <p class="muted small">
        paddock's own agent, its model loop on the daemon's host: <code>paddock run {sb} "…"</code>
      </p>
      <ul class="rows">
        {list.slice(0, 20).map((r) => (
          <RunRow key={r.id} r={r} />
        ))}
      </ul>
    </section>
  );
}

function RunRow({ r }) {
  const [steps, setSteps] = useState(null);
  const [err, setErr] = useState(null);
  const load = async (open) => {
    if (!open) return;
    try {
      setSteps((await api('GET', `/v1/runs/${encodeURIComponent(r.id)}`)).steps || []);
    } catch (e) {
      setErr(e);
    }
  };
  useEffect(() => {
    if (steps) load(true); // follow a run that is open while it works
  }, [r.updated]);
  const tokens = (r.input_tokens || 0) + (r.cache_read_tokens || 0) + (r.cache_write_tokens || 0) + (r.output_tokens || 0);
  return (
    <li class="row run" data-run={r.id} data-run-status={r.status}>
      <details onToggle={(e) => load(e.currentTarget.open)}>
        <summary>
          <span class={`badge st-${runBadge[r.status] || 'idle'}`}>{r.status}</span> <span class="name">{r.title}</span>
          <div class="meta">
            {r.id} · {r.tool_calls || 0} tool call{r.tool_calls === 1 ? '' : 's'} · {r.turns || 0} turn{r.turns === 1 ? '' : 's'} ·{' '}
            {tokens} tokens · {ago(r.created)}
          </div>
        </summary>
        {r.error && <p class="error small">{r.error}</p>}
        <ErrorText err={err} />
        {steps &&
          steps.map((s) => (
            <div class={`run-step ${s.kind}${s.is_error ? ' failed' : ''}`} key={s.seq} data-step={s.kind}>
              {s.kind === 'prompt' && <pre class="prompt">{s.input}</pre>}
              {s.kind === 'turn' && s.output && <p>{s.output}</p>}
              {s.kind === 'tool' && (
                <>
                  <div class="mono small">
                    {s.is_error ? '✗ ' : '✓ '}
                    {s.name} {summarize(s.input)}
                  </div>
                  <pre class="small">{s.output.length > 4000 ? s.output.slice(0, 4000) + '\n…' : s.output}</pre>
                </>
              )}
            </div>
          ))}
      </details>
    </li>
  );
}

/** The session badge colour each run status borrows. */
const runBadge = { running: 'working', done: 'idle', failed: 'error', cancelled: 'exited', stopped: 'exited', interrupted: 'error' };

/** A tool call's input in one line: its command or path when it has one. */
function summarize(input) {
  try {
    const v = JSON.parse(input);
    return v.command || [v.path, v.pattern].filter(Boolean).join(' ') || '';
  } catch {
    return input;
  }
}
