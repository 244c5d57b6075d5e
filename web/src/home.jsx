// The first screen: every sandbox with its sessions and their live status. Sessions
// waiting for you come first in a box of their own.
import { Link, urls } from './router.jsx';
import { changed, denialsOf, refreshSandbox, state, useStore } from './store.js';
import { api, sandboxPath } from './api.js';
import { Action, Bar, ErrorText, State, Status, ago, cost, costTitle } from './ui.jsx';
import { NotifyMe } from './notify.jsx';

export function Home() {
  const st = useStore();
  const list = st.sandboxes;
  const waiting = [];
  for (const sb of list || []) {
    for (const s of st.sessions[sb.name] || []) {
      if (s.status === 'waiting') waiting.push(s);
    }
  }
  return (
    <>
      <Bar title="paddock" sub={list ? `${list.length} sandbox${list.length === 1 ? '' : 'es'}` : ''}>
        <Link class="button small" href={urls.tasks()} data-nav="tasks">
          Tasks
        </Link>
      </Bar>
      <main>
        {st.error && !list && <ErrorText err={st.error} />}
        {!list && !st.error && <p class="muted">Loading sandboxes…</p>}
        {waiting.length > 0 && (
          <section class="card needs-you" aria-label="Waiting for you">
            <h2>Waiting for you</h2>
            <ul class="rows">
              {waiting.map((s) => (
                <SessionRow key={s.sandbox + '/' + s.name} s={s} full />
              ))}
            </ul>
          </section>
        )}
        {list && list.length === 0 && (
          <section class="card">
            <p>No sandboxes yet.</p>
            <p class="muted">
              Make one on the daemon's host: <code>paddock up ~/src/myrepo --agent claude</code>
            </p>
          </section>
        )}
        {(list || []).map((sb) => (
          <SandboxCard key={sb.name} sb={sb} />
        ))}
        {list && (
          <div class="buttons foot">
            <NotifyMe />
            <Action class="small" run={signOut} confirm="Sign this browser out? You will need a new login URL from `paddock web`.">
              Sign out
            </Action>
          </div>
        )}
      </main>
    </>
  );
}

/** Acknowledges a sandbox's standing alarms, and reads its card again. */
async function clearAlarms(name) {
  await api('POST', `${sandboxPath(name)}/alarms/clear`, {});
  await refreshSandbox(name);
}

async function signOut() {
  await api('POST', '/logout');
  state.signedOut = true;
  changed();
}

function SandboxCard({ sb }) {
  const st = useStore();
  const sessions = st.sessions[sb.name];
  const blocked = denialsOf(sb.name).filter((d) => !d.allowed).length;
  return (
    <section class="card sandbox" data-sandbox={sb.name}>
      <div class="card-head">
        <h2>
          <Link href={urls.sandbox(sb.name)}>{sb.name}</Link>
        </h2>
        <State state={sb.state} />
        {sb.alarms > 0 && (
          <span class="alarm" title={`paddock alarms ${sb.name} lists them; --clear acknowledges`}>
            ⚠ ALARM
          </span>
        )}
      </div>
      {sb.alarms > 0 && (
        <p class="alarm-note">
          The agent went for its own controls ({sb.alarms} alarm{sb.alarms === 1 ? '' : 's'}): see{' '}
          <code>paddock alarms {sb.name}</code>{' '}
          <Action class="clear-alarms" run={() => clearAlarms(sb.name)}>
            Clear
          </Action>
        </p>
      )}
      <div class="meta">
        {sb.backend}
        {sb.runtime ? ` (${sb.runtime})` : ''} · network {sb.network}
        {sb.detail ? ` · ${sb.detail}` : ''}
        {cost(sb.usage) && (
          <span class="cost" title={costTitle(sb.usage)}>
            {' · '}
            {cost(sb.usage)}
          </span>
        )}
      </div>
      {blocked > 0 && (
        <Link class="blocked" href={urls.sandbox(sb.name) + '#network'}>
          {blocked} blocked host{blocked === 1 ? '' : 's'} — review
        </Link>
      )}
      {sb.state === 'running' && st.sessionErrors[sb.name] && <p class="error">{st.sessionErrors[sb.name]}</p>}
      {sessions && sessions.length === 0 && <p class="muted">No sessions.</p>}
      {sessions && sessions.length > 0 && (
        <ul class="rows">
          {sessions.map((s) => (
            <SessionRow key={s.name} s={s} />
          ))}
        </ul>
      )}
      {sb.state !== 'running' && (
        <p class="muted">
          {sb.state === 'suspended' ? 'Suspended. ' : 'Stopped. '}
          <Link href={urls.sandbox(sb.name)}>{sb.state === 'suspended' ? 'Resume it' : 'Start it'}</Link> to see its sessions.
        </p>
      )}
    </section>
  );
}

/** One session: name, agent, status, when it last did something. */
export function SessionRow({ s, full }) {
  return (
    <li class={`row ${s.status === 'waiting' ? 'is-waiting' : ''}`} data-session={s.name}>
      <Link class="row-link" href={urls.session(s.sandbox, s.name)}>
        <span class="row-main">
          <span class="name">{full ? `${s.sandbox}/${s.name}` : s.name}</span>
          <span class="muted small">
            {s.agent}
            {s.last_activity ? ` · ${ago(s.last_activity)}` : ''}
            {s.messages ? ` · ${s.messages} msg` : ''}
            {cost(s.usage) && (
              <span class="cost" title={costTitle(s.usage)}>
                {' · '}
                {cost(s.usage)}
              </span>
            )}
          </span>
        </span>
        <Status status={s.status} />
      </Link>
    </li>
  );
}
