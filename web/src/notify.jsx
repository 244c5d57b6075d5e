// "Notify me": this browser subscribes to the daemon's Web Push notifications (a session
// waiting for you, a finished turn, an exit), shown by the service worker (public/sw.js)
// even when the page is closed.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { Action } from './ui.jsx';

const idKey = 'paddock.push.id';

/** Why push cannot work in this browser, or '' when it can. */
function unsupported() {
  if (!window.isSecureContext) return 'Notifications need HTTPS: serve with paddock web --tls-cert and --tls-key.';
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window))
    return 'This browser cannot receive notifications (on an iPhone, add paddock to the home screen first).';
  return '';
}

function keyBytes(b64) {
  const s = atob(b64.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

function label() {
  const ua = navigator.userAgent;
  const m = ua.match(/(Firefox|Edg|Chrome|CriOS|Safari)\/[\d.]+/);
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : /Windows/.test(ua) ? 'Windows' : '';
  return [m ? m[1].replace('Edg', 'Edge').replace('CriOS', 'Chrome') : 'Browser', os].filter(Boolean).join(' on ');
}

async function subscribe() {
  const perm = await Notification.requestPermission();
  if (perm !== 'granted') throw new Error('Notifications are blocked for this site: allow them in the browser settings.');
  const reg = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  await navigator.serviceWorker.ready;
  const { public_key } = await api('GET', '/v1/notify');
  let sub = await reg.pushManager.getSubscription();
  if (sub && sub.options.applicationServerKey) {
    // Made with another daemon's key: start again.
    const have = new Uint8Array(sub.options.applicationServerKey);
    const want = keyBytes(public_key);
    if (have.length !== want.length || have.some((b, i) => b !== want[i])) {
      await sub.unsubscribe();
      sub = null;
    }
  }
  if (!sub) {
    const wait = 10;
    let timer;
    try {
      sub = await Promise.race([
        reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) }),
        new Promise((_, fail) => {
          timer = setTimeout(() => fail(new Error(`no answer in ${wait} s; is this browser online?`)), wait * 1000);
        }),
      ]);
    } catch (e) {
      throw new Error(`The browser's push service did not subscribe this browser: ${e.message}`);
    } finally {
      clearTimeout(timer);
    }
  }
  const { id } = await api('POST', '/v1/notify/subscriptions', { ...sub.toJSON(), label: label() });
  localStorage.setItem(idKey, String(id));
}

async function unsubscribe() {
  const reg = await navigator.serviceWorker.getRegistration('/');
  const sub = reg && (await reg.pushManager.getSubscription());
  if (sub) await sub.unsubscribe();
  const id = localStorage.getItem(idKey);
  localStorage.removeItem(idKey);
  if (id) await api('DELETE', `/v1/notify/targets/${encodeURIComponent(id)}`).catch(() => {});
}

/** The "Notify me" control of the home screen. */
export function NotifyMe() {
  const why = unsupported();
  const [on, setOn] = useState(false);
  useEffect(() => {
    if (why) return;
    navigator.serviceWorker.getRegistration('/').then(async (reg) => {
      const sub = reg && (await reg.pushManager.getSubscription());
      setOn(!!sub && !!localStorage.getItem(idKey));
    });
  }, []);
  if (why) return <p class="muted small notify-state">{why}</p>;
  if (on)
    return (
      <span class="notify-state">
        <span class="muted small">Notifications on. </span>
        <Action class="small" run={async () => (await unsubscribe(), setOn(false))}>
          Turn off
        </Action>
      </span>
    );
  return (
    <Action class="small notify-me" run={async () => (await subscribe(), setOn(true))}>
      Notify me
    </Action>
  );
}
