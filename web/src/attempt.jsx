// One attempt of a task: its summary (as on the task's page) and its diff against the
// task's base commit, read with git inside the attempt's sandbox as the Changes screen
// does. A tap on a line of the diff opens a comment box there; what is written goes to the
// attempt's agent as its next message, with the file and line (a review).
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { MonoList, Untracked, useWorkspaceDiff } from './changes.jsx';
import { urls } from './router.jsx';
import { useStore } from './store.js';
import { AttemptCard, refreshTask, taskPath, usePoll, when } from './tasks.jsx';
import { Action, Bar, ErrorText } from './ui.jsx';

/**
 * Numbers a file's diff lines: each gets the line of the new file it is at (a removed
 * line, the line it was removed before), or 0 for a hunk's header.
 */
export function numberLines(lines) {
  let n = 0;
  return lines.map((l) => {
    const h = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(l);
    if (h) {
      n = Number(h[1]);
      return { text: l, line: 0, kind: 'hunk' };
    }
    if (l.startsWith('\\')) return { text: l, line: 0, kind: '' };
    if (l.startsWith('-')) return { text: l, line: Math.max(n, 1), kind: 'del' };
    const line = n++;
    return { text: l, line, kind: l.startsWith('+') ? 'add' : '' };
  });
}

export function Attempt({ name, n }) {
  const st = useStore();
  usePoll(() => refreshTask(name), [name]);
  const t = st.task[name];
  const a = t && (t.attempts || []).find((x) => String(x.n) === String(n));
  const [sent, setSent] = useState('');
  const title = a ? `${name} #${a.n}` : name;
  return (
    <>
      <Bar back={urls.task(name)} title={title} sub={a ? a.agent : ''} />
      <main>
        {!t && (st.taskError[name] ? <ErrorText err={st.taskError[name]} /> : <p class="muted">Loading…</p>)}
        {t && !a && <p class="error">Task {name} has no attempt {n}.</p>}
        {a && (
          <>
            <AttemptCard t={t} a={a} queue={st.queue[name]} full />
            <section class="card review-general">
              <h2>Message to {a.agent}</h2>
              <Comment t={t} a={a} onSent={setSent} />
              {sent && (
                <p class="small review-sent" role="status">
                  {sent}
                </p>
              )}
              {(a.reviews || []).length > 0 && (
                <ul class="plain reviews">
                  {a.reviews.map((r, i) => (
                    <li key={i} class="small">
                      {r.file ? (
                        <span class="mono">
                          {r.file}
                          {r.line ? `:${r.line}` : ''}
                        </span>
                      ) : null}{' '}
                      {r.message} {when(r.at) && <span class="muted">· {when(r.at)}</span>}
                    </li>
                  ))}
                </ul>
              )}
            </section>
            <AttemptDiff t={t} a={a} onSent={setSent} />
          </>
        )}
      </main>
    </>
  );
}

/** A comment box: sends a review (with file and line when given) to the attempt's agent. */
function Comment({ t, a, file, line, onSent, onClose }) {
  const [text, setText] = useState('');
  const send = async () => {
    const message = text.trim();
    if (!message) return;
    await api('POST', `${taskPath(t.name)}/attempts/${a.n}/review`, { file: file || '', line: line || 0, message });
    setText('');
    onSent(`Sent to ${a.agent}${file ? ` on ${file}${line ? `:${line}` : ''}` : ''}: its next commit is checked again.`);
    if (onClose) onClose();
    await refreshTask(t.name);
  };
  return (
    <div class="comment" data-comment={file ? `${file}:${line}` : ''}>
      <textarea
        rows={3}
        placeholder={file ? `Comment on ${file}:${line}` : `Tell ${a.agent} what to change`}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        autoFocus={!!file}
      />
      <div class="buttons">
        <Action class="small primary" run={send} data-send-review>
          Send
        </Action>
        {onClose && (
          <button type="button" class="small" onClick={onClose}>
            Cancel
          </button>
        )}
      </div>
    </div>
  );
}

/** The attempt's work against the task's base: commits, and each file's diff to comment on. */
function AttemptDiff({ t, a, onSent }) {
  const base = t.base;
  // Read again when the attempt's work moves (its checks ran on a new head).
  const head = `${a.head || ''}/${a.check_runs || 0}/${a.state}`;
  const { data, err, reload } = useWorkspaceDiff(a.sandbox, base, true, head);
  return (
    <section class="card attempt-diff" aria-label="Diff">
      <div class="card-head">
        <h2>Diff against {base.slice(0, 10)}</h2>
        <button type="button" class="small" onClick={reload}>
          Reload
        </button>
      </div>
      <ErrorText err={err && { message: `Reading the diff in ${a.sandbox}: ${err.message}`, hint: 'Is its sandbox running?' }} />
      {!data && !err && <p class="muted">Reading the attempt's workspace…</p>}
      {data && (
        <>
          {data.commits.length > 0 && (
            <MonoList items={data.commits} />
          )}
          <p class="small muted">
            {data.files.length} file{data.files.length === 1 ? '' : 's'} changed. Tap a line to comment on it.
          </p>
          {data.truncated && <p class="muted">The diff is too long to show whole.</p>}
          {data.files.map((f) => (
            <FileReview key={f.path} t={t} a={a} f={f} onSent={onSent} />
          ))}
          <Untracked paths={data.untracked} />
        </>
      )}
    </section>
  );
}

/** A file's diff, open, each line a target for a comment. */
function FileReview({ t, a, f, onSent }) {
  const [at, setAt] = useState(-1);
  const lines = numberLines(f.lines);
  return (
    <details class="diff" open data-file={f.path}>
      <summary>
        <span class="mono">{f.path}</span> <span class="add">+{f.add}</span> <span class="del">−{f.del}</span>
      </summary>
      <pre>
        {lines.map((l, i) => (
          <Fragment key={i}>
            <div
              class={`${l.kind} ${l.line ? 'tappable' : ''} ${i === at ? 'on' : ''}`}
              data-line={l.line || undefined}
              role={l.line ? 'button' : undefined}
              onClick={l.line ? () => setAt(i === at ? -1 : i) : undefined}
            >
              {l.text || ' '}
            </div>
            {i === at && (
              <div class="comment-at">
                <Comment t={t} a={a} file={f.path} line={l.line} onSent={onSent} onClose={() => setAt(-1)} />
              </div>
            )}
          </Fragment>
        ))}
      </pre>
    </details>
  );
}
