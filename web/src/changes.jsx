// The agent's work as it is now: the commits since the sandbox's starting commit and the
// diff of /workspace against it, committed or not, read with git inside the sandbox
// (hooks, fsmonitor, external diff and textconv off). Bringing it into the host
// repository is a sync and a merge, which run git on the host: the Sync and Merge buttons
// ask the daemon to run them (POST .../sync and .../merge, the same plan and refusals as
// `paddock merge`) when the daemon's machine holds the sandbox's host repository.
import { useEffect, useState } from 'preact/hooks';
import { api, run, sandboxPath } from './api.js';
import { urls } from './router.jsx';
import { sandbox, useStore } from './store.js';
import { Action, Bar, ErrorText } from './ui.jsx';

const git = ['git', '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'diff.external=', '-c', 'color.ui=false'];

/** Splits a unified diff into files: {path, lines, add, del}. */
export function parseDiff(text) {
  const files = [];
  let cur = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(line);
      cur = { path: m ? m[1] : line.slice(11), lines: [], add: 0, del: 0 };
      files.push(cur);
      continue;
    }
    if (!cur) continue;
    if (line.startsWith('+++ ') || line.startsWith('--- ')) {
      const p = line.slice(4);
      if (line.startsWith('+++ ') && p.startsWith('b/')) cur.path = p.slice(2);
      continue;
    }
    if (line.startsWith('+')) cur.add++;
    else if (line.startsWith('-')) cur.del++;
    cur.lines.push(line);
  }
  return files;
}

/**
 * Reads a sandbox's work against base with git inside it: {commits, files, truncated,
 * untracked}, again when key changes or reload is called; nothing while ready is false.
 */
export function useWorkspaceDiff(name, base, ready, key = '') {
  const [data, setData] = useState(null);
  const [err, setErr] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!name || !base || !ready) return;
    let alive = true;
    setErr(null);
    const opts = { dir: '/workspace' };
    Promise.all([
      run(name, [...git, 'log', '--no-color', '--format=%h %s', `${base}..HEAD`], opts),
      run(name, [...git, 'diff', '--no-ext-diff', '--no-textconv', '--no-color', '--find-renames', base, '--'], opts),
      run(name, [...git, 'ls-files', '--others', '--exclude-standard'], opts),
    ])
      .then(([log, diff, untracked]) => {
        if (!alive) return;
        const bad = [log, diff, untracked].find((r) => r.code !== 0);
        if (bad) throw new Error(bad.stderr.trim() || bad.error || `git exited with ${bad.code}`);
        setData({
          commits: log.stdout.split('\n').filter(Boolean),
          files: parseDiff(diff.stdout),
          truncated: diff.truncated,
          untracked: untracked.stdout.split('\n').filter(Boolean),
        });
      })
      .catch((e) => alive && setErr(e));
    return () => {
      alive = false;
    };
  }, [name, base, ready, key, tick]);
  return { data, err, reload: () => setTick((n) => n + 1) };
}

/** Lines of monospace text, one an item: commits, paths. */
export function MonoList({ items }) {
  return (
    <ul class="plain">
      {items.map((c) => (
        <li key={c} class="mono small">
          {c}
        </li>
      ))}
    </ul>
  );
}

/** The files git does not track yet, under a heading; nothing when there are none. */
export function Untracked({ paths }) {
  if (paths.length === 0) return null;
  return (
    <>
      <h3>Not in git yet</h3>
      <MonoList items={paths} />
    </>
  );
}

export function Changes({ sb: name }) {
  useStore();
  const sb = sandbox(name);
  const base = sb && sb.base_commit;
  const running = sb && sb.state === 'running';
  const { data, err, reload } = useWorkspaceDiff(name, base, running);

  return (
    <>
      <Bar back={urls.sandbox(name)} title="Changes" sub={name}>
        <button type="button" class="small" onClick={reload} disabled={!running}>
          Reload
        </button>
      </Bar>
      <main>
        {sb && <GitActions sb={sb} running={running} onDone={reload} />}
        {sb && !running && <p class="muted">Start the sandbox to see its changes.</p>}
        {sb && !base && <p class="muted">This sandbox has no starting commit to compare with.</p>}
        <ErrorText err={err} />
        {running && base && !data && !err && <p class="muted">Reading the workspace…</p>}
        {data && (
          <>
            <section class="card">
              <h2>Commits since {base.slice(0, 10)}</h2>
              {data.commits.length === 0 && <p class="muted">None.</p>}
              <MonoList items={data.commits} />
            </section>
            <section class="card">
              <h2>
                {data.files.length} file{data.files.length === 1 ? '' : 's'} changed
              </h2>
              {data.truncated && <p class="muted">The diff is too long to show whole.</p>}
              {data.files.map((f) => (
                <FileDiff key={f.path} f={f} />
              ))}
              <Untracked paths={data.untracked} />
            </section>
          </>
        )}
      </main>
    </>
  );
}

/** One file of a diff, folded: its path and counts, the lines once opened. */
export function FileDiff({ f }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="diff" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <span class="mono">{f.path}</span> <span class="add">+{f.add}</span> <span class="del">−{f.del}</span>
      </summary>
      {open && (
        <pre>
          {f.lines.map((l, i) => (
            <div key={i} class={l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : l.startsWith('@@') ? 'hunk' : ''}>
              {l || ' '}
            </div>
          ))}
        </pre>
      )}
    </details>
  );
}

/** How many commits and files, in words. */
const counts = (p) =>
  `${p.commits.length} commit${p.commits.length === 1 ? '' : 's'}, ${(p.files || []).length} file${(p.files || []).length === 1 ? '' : 's'}`;

/**
 * Sync and Merge, run by the daemon in the sandbox's host repository. Merge first shows
 * the plan (commits, files, fast-forward or merge commit, the files that run code on the
 * host once merged) and merges only on a second press.
 */
function GitActions({ sb, running, onDone }) {
  const [note, setNote] = useState('');
  const [plan, setPlan] = useState(null);
  if (!sb.source_path) {
    return (
      <p class="muted small git-actions">
        No Sync or Merge here: they run git in the sandbox's host repository, and this daemon's machine does not hold
        it (the sandbox was made from another machine). Run <code>paddock merge {sb.name}</code> in your clone.
      </p>
    );
  }
  const post = (what, body) => api('POST', `${sandboxPath(sb.name)}/${what}`, body);
  const sync = async () => {
    setPlan(null);
    const r = await post('sync', {});
    const n = (r.updates || []).length;
    setNote(n === 0 ? 'Synced: nothing new.' : `Synced: ${n} ref${n === 1 ? '' : 's'} updated in the host repository.`);
    onDone();
  };
  const check = async () => {
    setNote('');
    const p = await post('merge', { check: true });
    if (p.commits.length === 0) {
      setPlan(null);
      setNote(`${p.into} already has everything on ${p.branch}: nothing to merge.` + (p.uncommitted ? ' (Uncommitted work in the sandbox is not merged.)' : ''));
      return;
    }
    setPlan(p);
  };
  const merge = async () => {
    const a = await post('merge', { branch: plan.branch, commit: plan.commit, yes: (plan.runs_on_host || []).length > 0 });
    if (a.needs_yes) {
      setPlan(a);
      return;
    }
    setPlan(null);
    setNote(
      `Merged ${a.branch} into ${a.into} (${a.fast_forward ? 'fast-forward' : 'merge commit'}, ${counts(a)}). ` +
        `To undo, on the host: git reset --hard ${a.head.slice(0, 12)}`,
    );
    onDone();
  };
  return (
    <section class="card git-actions">
      <p>
        <Action run={sync} disabled={!running} class="small" data-git="sync">
          Sync
        </Action>{' '}
        <Action run={check} disabled={!running} class="small" data-git="check">
          Merge…
        </Action>
      </p>
      {note && <p class="small git-note">{note}</p>}
      {plan && (
        <div class="merge-plan">
          <p>
            Merge <span class="mono">{plan.branch}</span> into <span class="mono">{plan.into}</span> in {sb.source_path}:{' '}
            {plan.fast_forward ? 'a fast-forward' : 'a merge commit'}, {counts(plan)}.
          </p>
          <ul class="plain">
            {plan.commits.map((c) => (
              <li key={c} class="mono small">
                {c}
              </li>
            ))}
          </ul>
          {(plan.runs_on_host || []).length > 0 && (
            <div class="error merge-warning" role="alert">
              These files run code on the daemon's machine once merged; read them first:
              <ul class="plain">
                {plan.runs_on_host.map((h) => (
                  <li key={h.path} class="mono small">
                    {h.path} ({h.why})
                  </li>
                ))}
              </ul>
            </div>
          )}
          {plan.uncommitted && <p class="muted small">Uncommitted work in the sandbox is not merged.</p>}
          <p>
            <Action run={merge} class="small" data-git="merge">
              {(plan.runs_on_host || []).length > 0 ? 'Merge anyway' : `Merge into ${plan.into}`}
            </Action>{' '}
            <button type="button" class="small" data-git="cancel" onClick={() => setPlan(null)}>
              Cancel
            </button>
          </p>
        </div>
      )}
    </section>
  );
}
