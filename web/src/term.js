// The session's terminal: xterm.js over the exec WebSocket (docs/api.md, "Exec over
// WebSocket"), running the same tmux attach as `paddock chat`. Loaded only when a
// terminal opens: it is most of the UI's bytes.
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { attachArgv, execURL } from './api.js';

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;

/**
 * Mounts a terminal attached to session name of sandbox sb in el. onState is told
 * "connecting", "connected", "reconnecting", "ended" (the session's process or tmux
 * client ended) and "detached" (closed by this page). Returns {send, focus, reconnect,
 * dispose}.
 */
export function mount(el, { sb, name, onState }) {
  const dark = matchMedia('(prefers-color-scheme: dark)').matches;
  const term = new Terminal({
    fontSize: 13,
    fontFamily: 'ui-monospace, "SF Mono", Menlo, "DejaVu Sans Mono", Consolas, monospace',
    cursorBlink: true,
    scrollback: 5000,
    theme: dark ? { background: '#111416' } : { background: '#15191c', foreground: '#e6e6e6' },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(el);
  safeFit();

  const encoder = new TextEncoder();
  let ws = null;
  let disposed = false;
  let ended = false;
  let retries = 0;
  let retryTimer = null;

  function safeFit() {
    try {
      if (el.clientWidth > 0 && el.clientHeight > 0) fit.fit();
    } catch {
      // not laid out yet: the next resize fits it
    }
  }

  function sendControl(msg) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  function send(data) {
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const bytes = typeof data === 'string' ? encoder.encode(data) : data;
    const msg = new Uint8Array(bytes.length + 1);
    msg[0] = STDIN;
    msg.set(bytes, 1);
    ws.send(msg);
  }

  function connect() {
    if (disposed) return;
    clearTimeout(retryTimer);
    ended = false;
    onState(retries ? 'reconnecting' : 'connecting');
    const sock = new WebSocket(execURL(sb));
    sock.binaryType = 'arraybuffer';
    ws = sock;
    let exit = null;
    sock.onopen = () => {
      safeFit();
      // tmux repaints the whole screen on attach: start from a clean one.
      term.reset();
      sock.send(
        JSON.stringify({
          argv: attachArgv(name),
          env: ['TERM=xterm-256color', 'COLORTERM=truecolor'],
          tty: true,
          rows: term.rows,
          cols: term.cols,
        }),
      );
      retries = 0;
      onState('connected');
    };
    sock.onmessage = (e) => {
      if (typeof e.data === 'string') {
        try {
          const c = JSON.parse(e.data);
          if (c.type === 'exit') exit = c;
        } catch {
          // not a control message: ignored
        }
        return;
      }
      const b = new Uint8Array(e.data);
      if (b[0] === STDOUT || b[0] === STDERR) term.write(b.subarray(1));
    };
    sock.onclose = () => {
      if (ws !== sock || disposed) return;
      if (exit) {
        // tmux's client ended: the session ended, or was detached from (Ctrl-b d).
        ended = true;
        onState('ended', exit);
        return;
      }
      // The connection dropped (a phone asleep, the network, a daemon restart): again,
      // backing off to 10 s.
      retries++;
      onState('reconnecting');
      retryTimer = setTimeout(connect, Math.min(10000, 500 * 2 ** Math.min(retries, 5)));
    };
  }

  // Ctrl on the key bar applies to the next key typed.
  let ctrl = false;
  term.onData((d) => {
    if (ctrl && d.length === 1) {
      ctrl = false;
      onState('ctrl-off');
      const c = d.toUpperCase().charCodeAt(0);
      if (c >= 64 && c <= 95) d = String.fromCharCode(c - 64);
    }
    send(d);
  });
  term.onBinary((d) => send(Uint8Array.from(d, (ch) => ch.charCodeAt(0) & 0xff)));
  term.onResize(({ rows, cols }) => sendControl({ type: 'resize', rows, cols }));

  const ro = new ResizeObserver(() => safeFit());
  ro.observe(el);

  // A phone that slept has a socket that may look open but is dead: reattach if it
  // closed meanwhile, at once rather than after the back-off.
  const visible = () => {
    if (document.visibilityState !== 'visible' || disposed || ended) return;
    if (!ws || ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) {
      retries = Math.max(retries, 1);
      connect();
    }
  };
  document.addEventListener('visibilitychange', visible);
  window.addEventListener('online', visible);

  connect();

  return {
    /** Sends a key from the key bar: a name (Esc, Tab, ^C, arrows) or text. */
    key(k) {
      if (k === 'ctrl') {
        ctrl = !ctrl;
        onState(ctrl ? 'ctrl-on' : 'ctrl-off');
        term.focus();
        return;
      }
      const app = term.modes.applicationCursorKeysMode;
      const seq = {
        esc: '\x1b',
        tab: '\t',
        'ctrl-c': '\x03',
        up: app ? '\x1bOA' : '\x1b[A',
        down: app ? '\x1bOB' : '\x1b[B',
        right: app ? '\x1bOC' : '\x1b[C',
        left: app ? '\x1bOD' : '\x1b[D',
      }[k];
      send(seq ?? k);
    },
    focus: () => term.focus(),
    reconnect() {
      retries = 1;
      connect();
    },
    fit: safeFit,
    dispose() {
      disposed = true;
      clearTimeout(retryTimer);
      document.removeEventListener('visibilitychange', visible);
      window.removeEventListener('online', visible);
      ro.disconnect();
      if (ws) ws.close();
      term.dispose();
    },
  };
}
