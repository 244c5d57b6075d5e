// paddock's web UI: sandboxes and sessions with live status, conversations, terminals,
// blocked hosts and changes. Served by the daemon on its TCP listener (paddock web),
// behind the browser's session cookie.
import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { onUnauthorized } from './api.js';
import { Attempt } from './attempt.jsx';
import { Changes } from './changes.jsx';
import { Conversation } from './conversation.jsx';
import { connect } from './events.js';
import { Home } from './home.jsx';
import { Link, match, usePath } from './router.jsx';
import { Sandbox } from './sandbox.jsx';
import { changed, refreshAll, state, useStore } from './store.js';
import { Task, Tasks } from './tasks.jsx';
import { TerminalScreen } from './terminal.jsx';
import { Timeline } from './timeline.jsx';
import { Bar } from './ui.jsx';
import './app.css';

function App() {
  const path = usePath();
  const st = useStore();
  useEffect(title);
  const m = match(path);
  let screen;
  switch (m.screen) {
    case 'home':
      screen = <Home />;
      break;
    case 'sandbox':
      screen = <Sandbox sb={m.sb} />;
      break;
    case 'changes':
      screen = <Changes sb={m.sb} />;
      break;
    case 'session':
      screen = <Conversation sb={m.sb} name={m.name} />;
      break;
    case 'terminal':
      screen = <TerminalScreen sb={m.sb} name={m.name} />;
      break;
    case 'turns':
      screen = <Timeline sb={m.sb} name={m.name} />;
      break;
    case 'tasks':
      screen = <Tasks />;
      break;
    case 'task':
      screen = <Task name={m.name} />;
      break;
    case 'attempt':
      screen = <Attempt name={m.name} n={m.n} />;
      break;
    default:
      screen = (
        <>
          <Bar back="/" title="Not found" />
          <main>
            <p>
              Nothing here. <Link href="/">See your sandboxes</Link>.
            </p>
          </main>
        </>
      );
  }
  return (
    <>
      {st.signedOut && (
        <div class="banner" role="alert">
          This browser is signed out. On the daemon's host, run <code>paddock web</code> for a new login URL.
        </div>
      )}
      {screen}
    </>
  );
}

// Waiting sessions in the tab's title, so a background tab shows them.
function title() {
  let n = 0;
  for (const list of Object.values(state.sessions)) n += list.filter((s) => s.status === 'waiting').length;
  const t = n ? `(${n}) paddock` : 'paddock';
  if (document.title !== t) document.title = t;
}

onUnauthorized(() => {
  if (!state.signedOut) {
    state.signedOut = true;
    changed();
  }
});

const root = document.getElementById('app');
root.textContent = '';
render(<App />, root);
refreshAll();
connect();
