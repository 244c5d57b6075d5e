// The terminal screen: the session's tmux, full height, with a key bar for the keys a
// phone's keyboard lacks. The terminal itself (term.js, xterm.js) loads on first use.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Tabs } from './conversation.jsx';
import { urls } from './router.jsx';
import { session, useStore } from './store.js';
import { Bar, Status } from './ui.jsx';

const keys = [
  ['esc', 'Esc'],
  ['tab', 'Tab'],
  ['ctrl', 'Ctrl'],
  ['ctrl-c', '^C'],
  ['left', '←'],
  ['up', '↑'],
  ['down', '↓'],
  ['right', '→'],
];

const stateWords = {
  loading: 'loading…',
  connecting: 'connecting…',
  connected: 'attached',
  reconnecting: 'reconnecting…',
  ended: 'ended',
};

export function TerminalScreen({ sb, name }) {
  useStore();
  const s = session(sb, name);
  const box = useRef(null);
  const screen = useRef(null);
  const handle = useRef(null);
  const [conn, setConn] = useState('loading');
  const [ctrl, setCtrl] = useState(false);
  const [failed, setFailed] = useState(null);

  useEffect(() => {
    let gone = false;
    const onState = (st) => {
      if (st === 'ctrl-on' || st === 'ctrl-off') setCtrl(st === 'ctrl-on');
      else setConn(st);
    };
    import('./term.js')
      .then((m) => {
        if (!gone) handle.current = m.mount(box.current, { sb, name, onState });
      })
      .catch((e) => setFailed(e));
    return () => {
      gone = true;
      if (handle.current) handle.current.dispose();
      handle.current = null;
    };
  }, [sb, name]);

  // On a phone the keyboard covers part of the layout: size the screen to what is
  // visible, so the prompt stays above the keyboard.
  useEffect(() => {
    const vv = window.visualViewport;
    if (!vv) return;
    const f = () => {
      if (screen.current) screen.current.style.height = `${vv.height}px`;
      window.scrollTo(0, 0);
    };
    f();
    vv.addEventListener('resize', f);
    return () => vv.removeEventListener('resize', f);
  }, []);

  const press = (k) => (e) => {
    e.preventDefault();
    if (handle.current) handle.current.key(k);
  };
  return (
    <div class="term-screen" ref={screen}>
      <Bar back={urls.sandbox(sb)} title={name} sub={`${sb} · ${stateWords[conn] || conn}`}>
        {s && <Status status={s.status} />}
      </Bar>
      <Tabs sb={sb} name={name} at="terminal" />
      {failed && <p class="error">The terminal could not load: {failed.message}</p>}
      {conn === 'ended' && (
        <p class="ended">
          The terminal ended (the session exited or was detached).{' '}
          <button type="button" onClick={() => handle.current && handle.current.reconnect()}>
            Attach again
          </button>
        </p>
      )}
      <div class="term" ref={box} data-conn={conn} onClick={() => handle.current && handle.current.focus()} />
      <div class="keybar" role="toolbar" aria-label="Keys">
        {keys.map(([k, label]) => (
          <button
            type="button"
            key={k}
            class={k === 'ctrl' && ctrl ? 'on' : ''}
            aria-pressed={k === 'ctrl' ? ctrl : undefined}
            data-key={k}
            // pointerdown keeps the focus (and the phone's keyboard) on the terminal.
            onPointerDown={(e) => e.preventDefault()}
            onClick={press(k)}
          >
            {label}
          </button>
        ))}
      </div>
    </div>
  );
}
