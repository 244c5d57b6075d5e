// Client-side routes: the daemon answers index.html for every path that is not a file,
// so each screen has its own URL (bookmarks, the back button).
import { useEffect, useState } from 'preact/hooks';

const subscribers = new Set();

export function navigate(to, { replace = false } = {}) {
  if (to === location.pathname) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.scrollTo(0, 0);
  for (const f of subscribers) f();
}

window.addEventListener('popstate', () => {
  for (const f of subscribers) f();
});

/** The current path, re-rendering on navigation. */
export function usePath() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const f = () => setPath(location.pathname);
    subscribers.add(f);
    return () => subscribers.delete(f);
  }, []);
  return path;
}

/** A link that navigates without reloading the page. */
export function Link({ href, children, ...props }) {
  const click = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={click} {...props}>
      {children}
    </a>
  );
}

const enc = encodeURIComponent;

export const urls = {
  home: () => '/',
  sandbox: (sb) => `/s/${enc(sb)}`,
  // Session names start with a letter or digit, so "-" is never one.
  changes: (sb) => `/s/${enc(sb)}/-/changes`,
  session: (sb, name) => `/s/${enc(sb)}/${enc(name)}`,
  terminal: (sb, name) => `/s/${enc(sb)}/${enc(name)}/terminal`,
  turns: (sb, name) => `/s/${enc(sb)}/${enc(name)}/turns`,
  tasks: () => '/t',
  task: (name) => `/t/${enc(name)}`,
  attempt: (name, n) => `/t/${enc(name)}/${n}`,
};

/** Splits a path into a screen and its parameters. */
export function match(path) {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  if (parts.length === 0) return { screen: 'home' };
  if (parts[0] === 't') {
    if (parts.length === 1) return { screen: 'tasks' };
    if (parts.length === 2) return { screen: 'task', name: parts[1] };
    if (parts.length === 3 && /^\d+$/.test(parts[2])) return { screen: 'attempt', name: parts[1], n: Number(parts[2]) };
    return { screen: 'missing' };
  }
  if (parts[0] !== 's' || parts.length < 2) return { screen: 'missing' };
  const sb = parts[1];
  if (parts.length === 2) return { screen: 'sandbox', sb };
  if (parts.length === 4 && parts[2] === '-' && parts[3] === 'changes') return { screen: 'changes', sb };
  if (parts.length === 3) return { screen: 'session', sb, name: parts[2] };
  if (parts.length === 4 && parts[3] === 'terminal') return { screen: 'terminal', sb, name: parts[2] };
  if (parts.length === 4 && parts[3] === 'turns') return { screen: 'turns', sb, name: parts[2] };
  return { screen: 'missing' };
}
