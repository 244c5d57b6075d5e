package webui_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
)

// TestBrowserNotifications drives "Notify me" in headless Chromium: the service worker
// registers, the browser asks its push service for a subscription (headless Chromium's
// never answers here, so the page must say that plainly instead of waiting for ever), and a push message handed
// to the service worker (through DevTools, as the push service would) is shown as a
// notification whose tap opens the session's page.
//
// It runs alone, not beside the other browser tests: beside them, in two runs of make test
// in a row, the pushed message was never shown (it passes alone); why is not known yet.
func TestBrowserNotifications(t *testing.T) {
	chrome := chromium(t)
	d := newDaemon(t)
	login := d.web()
	u, err := url.Parse(login)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host

	b := newBrowser(t, chrome)
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var regID serviceworker.RegistrationID
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if r.ScopeURL == origin+"/" && !r.IsDeleted {
					mu.Lock()
					regID = r.RegistrationID
					mu.Unlock()
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(login))
	b.tap(`form[action="/login"] button`)
	if _, err := chromedp.Call(b.ctx, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}

	b.tap(`.notify-me`)
	b.waitFor("the outcome of Notify me", `(document.querySelector('.notify-state') || {}).innerText?.includes('Notifications on') || !!document.querySelector('.action .error')`)
	subscribed := strings.Contains(b.text(".notify-state"), "Notifications on")
	if !subscribed {
		msg := b.text(".action .error")
		if !strings.Contains(msg, "push service") {
			t.Fatalf("Notify me failed without saying the push service refused: %q", msg)
		}
		t.Logf("headless Chromium has no push service here: %q", msg)
	} else {
		st, err := d.client.NotifyStatus(context.Background())
		if err != nil || len(st.Targets) != 1 || st.Targets[0].Kind != "push" {
			t.Fatalf("the browser subscribed but the daemon has %+v %v", st.Targets, err)
		}
	}
	b.waitFor("the service worker active", `(window.__sw = window.__sw || navigator.serviceWorker.getRegistration('/').then(r => window.__active = !!(r && r.active)), window.__active === true)`)
	var id serviceworker.RegistrationID
	for i := 0; i < 100 && id == ""; i++ {
		mu.Lock()
		id = regID
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("DevTools reported no service worker registration for " + origin + "/")
	}

	// A push as the daemon sends it (internal/notify's payload) shows as a notification.
	payload, _ := json.Marshal(map[string]string{"title": "repo/worker is waiting for you", "body": "The agent needs an answer or a permission.",
		"url": "http://paddock.example/s/repo/worker", "tag": "paddock:repo/worker", "what": "waiting"})
	if _, err := chromedp.Call(b.ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{Origin: origin, RegistrationID: id, Data: string(payload)}); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the notification shown", `(navigator.serviceWorker.getRegistration('/').then(r => r.getNotifications()).then(ns => window.__notes = ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url}))), (window.__notes || []).length > 0)`)
	got := eval[string](b, `JSON.stringify(window.__notes)`)
	if !strings.Contains(got, `"title":"repo/worker is waiting for you"`) || !strings.Contains(got, `"tag":"paddock:repo/worker"`) ||
		!strings.Contains(got, `"url":"http://paddock.example/s/repo/worker"`) {
		t.Fatalf("notifications shown: %s", got)
	}
}
