// Tasks: one prompt tried by several agents in parallel, each attempt in its own sandbox,
// checked and ranked by the daemon. The list, and a task's page: its attempts side by side
// on a wide screen (stacked on a phone), each with its place and why, its checks, diff
// size, cost, time and the judge's verdict; Land and PR buttons, and the merge queue's
// entries after. Kept current from the task events on the event stream, and polled while a
// task's page is open (an attempt's agent at work sends none).
import { useEffect } from 'preact/hooks';
import { api } from './api.js';
import { onCatchUp, onEvent } from './events.js';
import { Link, urls } from './router.jsx';
import { changed, state, useStore } from './store.js';
import { Action, Bar, ErrorText, ago, cost, costTitle } from './ui.jsx';

const enc = encodeURIComponent;
const POLL_MS = 3000;

export const taskPath = (name) => `/v1/tasks/${enc(name)}`;

/** GET /v1/tasks, null until loaded; tasks and their queue entries by name. */
state.tasks = null;
state.tasksError = null;
state.task = {};
state.taskError = {};
state.queue = {};

/** Reads the list of tasks. */
export async function refreshTasks() {
  try {
    state.tasks = (await api('GET', '/v1/tasks')) || [];
    state.tasksError = null;
  } catch (e) {
    state.tasksError = e;
  }
  changed();
}

/** Reads a task and its merge queue entries. */
export async function refreshTask(name) {
  try {
    const [t, q] = await Promise.all([api('GET', taskPath(name)), api('GET', `/v1/queue?task=${enc(name)}`).catch(() => null)]);
    state.task[name] = t;
    if (q) state.queue[name] = q;
    delete state.taskError[name];
  } catch (e) {
    state.taskError[name] = e;
  }
  changed();
}

/** The task an event's sandbox is an attempt of, among those read. */
function taskOfSandbox(sb) {
  for (const t of Object.values(state.task)) {
    if ((t.attempts || []).some((a) => a.sandbox === sb)) return t.name;
  }
  for (const t of state.tasks || []) {
    if ((t.attempts || []).some((a) => a.sandbox === sb)) return t.name;
  }
  return '';
}

onEvent((ev) => {
  const isTask = ev.kind.startsWith('task-');
  const name = (ev.attrs && ev.attrs.task) || taskOfSandbox(ev.sandbox);
  if (!isTask && !(name && (ev.kind === 'session-status' || ev.kind === 'usage'))) return;
  if (state.tasks) refreshTasks();
  if (name && state.task[name]) refreshTask(name);
  else if (isTask) for (const n of Object.keys(state.task)) refreshTask(n);
});

onCatchUp(() => {
  if (state.tasks) refreshTasks();
  for (const n of Object.keys(state.task)) refreshTask(n);
});

/** Calls f now and every POLL_MS while the page is shown and the component is mounted. */
export function usePoll(f, deps) {
  useEffect(() => {
    f();
    const id = setInterval(() => {
      if (document.visibilityState === 'visible') f();
    }, POLL_MS);
    return () => clearInterval(id);
  }, deps);
}

/** The sum of the attempts' costs, for cost(). */
function taskUsage(t) {
  const u = { requests: 0, unpriced_requests: 0, cost_usd: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };
  for (const a of t.attempts || []) {
    for (const k of Object.keys(u)) u[k] += (a.usage && a.usage[k]) || 0;
  }
  return u;
}

const best = (t) => (t.attempts || []).find((a) => a.rank === 1);

/** "passed" / "failed" / "" (not checked yet) of an attempt. */
const verdictOf = (a) => (a.passed === true ? 'passed' : a.passed === false ? 'failed' : '');

/** The list of tasks: name, state, attempts, the best, cost, age. */
export function Tasks() {
  const st = useStore();
  usePoll(refreshTasks, []);
  const list = st.tasks;
  return (
    <>
      <Bar back={urls.home()} title="Tasks" sub={list ? `${list.length} task${list.length === 1 ? '' : 's'}` : ''} />
      <main>
        <ErrorText err={!list && st.tasksError} />
        {!list && !st.tasksError && <p class="muted">Loading tasks…</p>}
        {list && list.length === 0 && (
          <section class="card">
            <p>No tasks yet.</p>
            <p class="muted">
              Start one on the daemon's host: <code>paddock task new ~/src/myrepo --prompt "…" --agents claude:2,codex --check "make test"</code>
            </p>
          </section>
        )}
        {list && list.length > 0 && (
          <section class="card">
            <ul class="rows">
              {[...list].reverse().map((t) => (
                <TaskRow key={t.name} t={t} />
              ))}
            </ul>
          </section>
        )}
      </main>
    </>
  );
}

function TaskRow({ t }) {
  const b = best(t);
  const u = taskUsage(t);
  const n = (t.attempts || []).length;
  return (
    <li class="row" data-task={t.name}>
      <Link class="row-link" href={urls.task(t.name)}>
        <span class="row-main">
          <span class="name">{t.name}</span>
          <span class="muted small">
            {n} attempt{n === 1 ? '' : 's'}
            {b ? ` · best #${b.n} ${b.agent}${verdictOf(b) ? ` (${verdictOf(b)})` : ''}` : ''}
            {cost(u) && (
              <span class="cost" title={costTitle(u)}>
                {' · '}
                {cost(u)}
              </span>
            )}
            {when(t.created) ? ` · ${when(t.created)}` : ''}
          </span>
        </span>
        <TaskState state={t.state} />
      </Link>
    </li>
  );
}

/** A task's, an attempt's or a queue entry's state, as a badge. */
export function TaskState({ state: s, kind = 'task' }) {
  return (
    <span class={`badge ts-${s}`} data-state={s} data-kind={kind}>
      {s}
    </span>
  );
}

/** ago() of a time the daemon sent, "" for none (Go's zero time). */
export const when = (t) => (t && !t.startsWith('0001-') ? ago(t) : '');

/** How long, in words: "300 ms", "45 s", "3 min", "1 h 5 min". */
export function took(ms) {
  if (!(ms > 0)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** How long an attempt's agent worked: to its turn's end, or to now. */
export function elapsed(a) {
  if (!a.started || a.started.startsWith('0001')) return 0;
  const end = a.ended ? new Date(a.ended).getTime() : Date.now();
  return end - new Date(a.started).getTime();
}

/** A task's page: the prompt, the queue, and the attempts ranked. */
export function Task({ name }) {
  const st = useStore();
  usePoll(() => refreshTask(name), [name]);
  const t = st.task[name];
  const err = st.taskError[name];
  if (!t) {
    return (
      <>
        <Bar back={urls.tasks()} title={name} />
        <main>{err ? <ErrorText err={err} /> : <p class="muted">Loading…</p>}</main>
      </>
    );
  }
  const queue = st.queue[name] || [];
  const attempts = [...(t.attempts || [])].sort((a, b) => (a.rank || 99) - (b.rank || 99) || a.n - b.n);
  return (
    <>
      <Bar back={urls.tasks()} title={t.name} sub={<TaskState state={t.state} />} />
      <main class="wide">
        <section class="card task-head">
          <div class="meta">
            {t.repo} · {t.branch ? `into ${t.branch}` : 'no branch'} · base <span class="mono">{(t.base || '').slice(0, 10)}</span>
            {t.judge ? ` · judge ${t.judge}` : ''}
          </div>
          {t.error && <p class="error">{t.error}</p>}
          <details class="prompt">
            <summary>Prompt</summary>
            <pre>{t.prompt}</pre>
          </details>
          {(t.checks || []).length > 0 && (
            <p class="small muted">
              Checks: {t.checks.map((c, i) => (
                <code key={i}>{c}</code>
              )).reduce((acc, x) => (acc.length ? [...acc, ', ', x] : [x]), [])}
            </p>
          )}
        </section>
        {queue.length > 0 && <Queue name={name} entries={queue} t={t} />}
        <div class="attempts">
          {attempts.map((a) => (
            <AttemptCard key={a.n} t={t} a={a} queue={queue} />
          ))}
        </div>
      </main>
    </>
  );
}

/** The merge queue's entries of a task, newest first, with Drop on the open ones. */
function Queue({ name, entries }) {
  const drop = (id) => async () => {
    await api('DELETE', `/v1/queue/${id}`);
    await refreshTask(name);
  };
  return (
    <section class="card queue" aria-label="Landing">
      <h2>Landing</h2>
      <ul class="plain">
        {[...entries].reverse().map((e) => (
          <li key={e.id} class="queue-entry" data-entry={e.id} data-queue-state={e.state}>
            <TaskState state={e.state} kind="queue" /> attempt #{e.attempt} into <span class="mono">{e.into}</span>
            {e.commit ? (
              <>
                {' '}
                at <span class="mono">{e.commit.slice(0, 10)}</span>
              </>
            ) : null}
            {when(e.updated) && <span class="muted small"> · {when(e.updated)}</span>}
            {e.detail && <div class="small queue-detail">{e.detail}</div>}
            {(e.conflicts || []).length > 0 && (
              <div class="small error">
                Conflicts in: <span class="mono">{e.conflicts.join(', ')}</span> (the attempt's agent was told)
              </div>
            )}
            {e.pr && (
              <div class="small">
                Pull request{' '}
                <a href={e.pr.url} target="_blank" rel="noopener noreferrer" data-pr-url>
                  #{e.pr.number}
                </a>{' '}
                ({e.pr.state})
              </div>
            )}
            {isOpen(e) && (
              <Action class="small" run={drop(e.id)} confirm={`Drop this landing of attempt #${e.attempt}? Nothing lands.`} data-drop={e.id}>
                Drop
              </Action>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Whether a queue entry has not reached its end (wire.QueueEntry.Open). */
export function isOpen(e) {
  if (['landed', 'failed', 'dropped'].includes(e.state)) return false;
  if (e.state === 'pr') return !e.pr || e.pr.state === 'open';
  return true;
}

/** One attempt: its place and why, state, checks, diff, cost, time, verdict, and Land. */
export function AttemptCard({ t, a, queue, full }) {
  const v = verdictOf(a);
  const open = (queue || []).find((e) => e.attempt === a.n && isOpen(e));
  const checked = (t.checks || []).length > 0;
  const canLand = !open && a.state === 'done' && (a.passed === true || (!checked && a.rank === 1));
  return (
    <section class={`card attempt ${a.rank === 1 ? 'is-best' : ''}`} data-attempt={a.n} data-rank={a.rank}>
      <div class="card-head">
        <h2>
          <span class="rank">#{a.rank || '?'}</span>{' '}
          {full ? a.agent : <Link href={urls.attempt(t.name, a.n)}>{a.agent}</Link>} <span class="muted small">attempt {a.n}</span>
        </h2>
        <TaskState state={a.state} kind="attempt" />
        {v && <span class={`badge check-${v}`} data-checks={v}>{v === 'passed' ? 'checks pass' : 'checks fail'}</span>}
      </div>
      {a.why && <p class="why small">{a.why}</p>}
      {a.error && <p class="error">{a.error}</p>}
      <div class="meta">
        <span class="mono">{a.sandbox}</span> · {a.backend}
        {' · '}
        <span class="diffstat">
          {a.diff ? a.diff.files : 0} file{a.diff && a.diff.files === 1 ? '' : 's'} <span class="add">+{a.diff ? a.diff.insertions : 0}</span>{' '}
          <span class="del">−{a.diff ? a.diff.deletions : 0}</span>
        </span>
        {cost(a.usage) && (
          <span class="cost" title={costTitle(a.usage)}>
            {' · '}
            {cost(a.usage)}
          </span>
        )}
        {elapsed(a) > 0 && ` · ${took(elapsed(a))}`}
        {a.dirty ? ' · uncommitted work' : ''}
      </div>
      <Checks a={a} />
      {a.verdict && (
        <p class="verdict small" data-verdict>
          {a.verdict.error ? (
            <span class="muted">
              Judge {a.verdict.judge}: no score ({a.verdict.error})
            </span>
          ) : (
            <>
              <strong>
                {a.verdict.score}/10
              </strong>{' '}
              from {a.verdict.judge}: {a.verdict.reason}
            </>
          )}
        </p>
      )}
      {(a.reviews || []).length > 0 && (
        <p class="small muted">
          {a.reviews.length} review comment{a.reviews.length === 1 ? '' : 's'} sent
        </p>
      )}
      <div class="buttons">
        {!full && (
          <Link class="button small" href={urls.attempt(t.name, a.n)} data-open-diff={a.n}>
            Diff & review
          </Link>
        )}
        {canLand && <Land t={t} a={a} />}
      </div>
    </section>
  );
}

/** The checks' results: each command, pass or fail, and the end of a failing one's output. */
function Checks({ a }) {
  const checks = a.checks || [];
  if (checks.length === 0) {
    return <p class="small muted">{a.state === 'checking' ? 'Checks running…' : 'No checks run yet.'}</p>;
  }
  return (
    <ul class="plain checks">
      {checks.map((c, i) => (
        <li key={i} class={`check ${c.exit === 0 ? 'ok' : 'bad'}`} data-check-exit={c.exit}>
          <span class="mark">{c.exit === 0 ? '✓' : '✗'}</span> <code>{c.command}</code>
          <span class="muted small">
            {c.exit !== 0 ? ` exit ${c.exit}` : ''}
            {c.millis ? ` · ${took(c.millis)}` : ''}
          </span>
          {c.exit !== 0 && c.output && <pre class="check-output">{c.output}</pre>}
        </li>
      ))}
    </ul>
  );
}

/**
 * Land and PR for an attempt. A landing the daemon refuses because the work changes files
 * that run code on the host once landed says so; a second press lands it anyway (yes).
 */
function Land({ t, a }) {
  useStore();
  const key = `${t.name}/${a.n}`;
  const refused = landRefused[key];
  const land = (pr, yes) => async () => {
    try {
      await api('POST', `${taskPath(t.name)}/land`, { attempt: a.n, pr, yes });
      delete landRefused[key];
    } catch (e) {
      if (!yes && /--yes|run code on|runs code on/i.test(e.message + ' ' + (e.hint || ''))) {
        landRefused[key] = { pr, err: e };
        changed();
        return;
      }
      throw e;
    }
    await refreshTask(t.name);
  };
  if (refused) {
    return (
      <div class="land-warning">
        <ErrorText err={refused.err} />
        <div class="buttons">
          <Action class="small" run={land(refused.pr, true)} data-land-anyway={a.n}>
            {refused.pr ? 'Open the PR anyway' : 'Land anyway'}
          </Action>
          <button
            type="button"
            class="small"
            onClick={() => {
              delete landRefused[key];
              changed();
            }}
          >
            Cancel
          </button>
        </div>
      </div>
    );
  }
  const into = t.branch || '?';
  return (
    <>
      <Action class="small primary" run={land(false, false)} confirm={`Land attempt #${a.n} (${a.agent}) into ${into}? It is rebased in its sandbox, checked again, and ${into} fast-forwarded if the checks pass.`} data-land={a.n}>
        Land into {into}
      </Action>
      <Action class="small" run={land(true, false)} confirm={`Open a pull request of attempt #${a.n} (${a.agent})?`} data-pr={a.n}>
        Open PR
      </Action>
    </>
  );
}

/** Landings refused for files that run code on the host, by "task/attempt". */
const landRefused = {};
