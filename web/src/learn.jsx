// Egress learn mode on the sandbox screen: start it, and the allowlist it proposes (the
// sandbox's rules with what each allowed, and the rules to add) with an apply action.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { refreshRules } from './store.js';
import { Action, ErrorText } from './ui.jsx';

/** The sandbox's learn mode and proposal; nothing for a sandbox with an open network. */
export function Learn({ sb, network }) {
  const [prop, setProp] = useState(null);
  const [none, setNone] = useState(false);
  const [err, setErr] = useState(null);
  const [applied, setApplied] = useState(null);
  const load = async () => {
    setErr(null);
    try {
      setProp(await api('GET', `/v1/net/proposal?sandbox=${encodeURIComponent(sb)}`));
      setNone(false);
    } catch (e) {
      if (e.status === 404) {
        setProp(null);
        setNone(true);
      } else setErr(e);
    }
  };
  useEffect(() => {
    if (network !== 'open') load();
  }, [sb, network]);
  if (network === 'open') return null;
  const learn = (body) => async () => {
    await api('POST', '/v1/net/learning', { sandbox: sb, ...body });
    await load();
  };
  const apply = async () => {
    const done = await api('POST', '/v1/net/proposal', { sandbox: sb });
    setApplied(done.lines.filter((x) => x.op !== ' ').map((x) => x.pattern));
    await Promise.all([refreshRules(sb), load()]);
  };
  const line = (x) => (
    <div key={x.op + x.scope + x.pattern} class={`line op${x.op === '+' ? 'add' : x.op === '-' ? 'rm' : 'keep'}`} data-pattern={x.pattern}>
      {x.op} {x.action} {x.pattern} ({x.scope}){' '}
      {x.op === '+'
        ? `${x.requests} refused: ${(x.hosts || []).join(' ')}`
        : x.requests
          ? `${x.requests} ${x.action === 'deny' ? 'refused' : 'allowed'}`
          : 'never used'}
    </div>
  );
  const l = prop?.learning;
  const adds = prop ? prop.lines.filter((x) => x.op === '+') : [];
  const unused = prop ? prop.lines.filter((x) => x.op === ' ' && !x.requests && x.scope !== sb) : [];
  return (
    <section class="card learn" aria-label="Learn mode" data-learning={l ? (l.active ? 'active' : 'ended') : 'never'}>
      <h2>Learn the allowlist</h2>
      <ErrorText err={err} />
      {none && (
        <p class="muted">
          Record what this sandbox reaches for (nothing new is allowed meanwhile), then add the rules that would have
          allowed it.
        </p>
      )}
      {l && (
        <p class="muted small">
          {l.active ? 'Learning' : 'Learned'} from {when(l.since)} until {when(l.until)}: {l.requests} requests to{' '}
          {l.destinations} destinations{l.dropped ? ` (${l.dropped} more not recorded)` : ''}.
        </p>
      )}
      {prop && <pre class="proposal">{prop.lines.filter((x) => x.op !== ' ' || x.requests || x.scope === sb).map(line)}</pre>}
      {unused.length > 0 && (
        <details>
          <summary class="muted small">
            {unused.length} default and global {unused.length === 1 ? 'rule' : 'rules'} never used
          </summary>
          <pre class="proposal">{unused.map(line)}</pre>
        </details>
      )}
      {applied && <p class="muted applied">Applied: {applied.join(', ') || 'nothing to change'}.</p>}
      <div class="buttons">
        {(!l || !l.active) && (
          <Action run={learn({ for: '1h' })} class={none ? 'primary start' : 'start'}>
            Learn for an hour
          </Action>
        )}
        {l?.active && (
          <Action class="stop" run={learn({ stop: true })}>
            Stop learning
          </Action>
        )}
        {prop && (
          <Action class="refresh" run={load}>
            Refresh
          </Action>
        )}
        {adds.length > 0 && (
          <Action class="primary apply" run={apply}>
            Apply {adds.length} {adds.length === 1 ? 'rule' : 'rules'}
          </Action>
        )}
      </div>
    </section>
  );
}

/** A time of the learn window, in the browser's own zone and words. */
function when(iso) {
  return new Date(iso).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}
