package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddockhq/paddock/internal/notify/pushtest"
)

// webhook is a webhook receiver for scripts:
//
//	webhook            starts it; sets WEBHOOK_URL; each request becomes a line of webhook.log:
//	                   METHOD PATH title=... click=... tags=... priority=... type=... auth=... body=...
//	webhook wait N     waits until N requests came, then prints the log
func webhook(ts *testscript.TestScript, neg bool, args []string) {
	logPath := ts.MkAbs("webhook.log")
	if len(args) == 2 && args[0] == "wait" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		for i := 0; i < 1000; i++ {
			data, _ := os.ReadFile(logPath)
			if strings.Count(string(data), "\n") >= n {
				fmt.Fprint(ts.Stdout(), string(data))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		data, _ := os.ReadFile(logPath)
		ts.Fatalf("the webhook got fewer than %d requests:\n%s", n, data)
	}
	if len(args) != 0 {
		ts.Fatalf("usage: webhook | webhook wait N")
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s title=%q click=%q tags=%q priority=%q type=%q auth=%q body=%q\n", r.Method, r.URL.Path,
				r.Header.Get("Title"), r.Header.Get("Click"), r.Header.Get("Tags"), r.Header.Get("Priority"),
				r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body)
			f.Close()
		}
	}))
	ts.Defer(srv.Close)
	ts.Setenv("WEBHOOK_URL", srv.URL)
}

// pushServices are the scripts' push services, by script.
var pushServices sync.Map // *testscript.TestScript -> *pushtest.Service

// deferrer adapts a script to pushtest.Start's Cleanup.
type deferrer struct{ ts *testscript.TestScript }

func (d deferrer) Cleanup(f func()) { d.ts.Defer(f) }

// pushService is a Web Push service for scripts (internal/notify/pushtest: it checks
// VAPID and decrypts each message with the browser's keys, as a real one and the
// browser would):
//
//	pushservice                   starts it
//	pushservice subscribe FILE    a new browser subscription, as PushSubscription.toJSON() gives it
//	pushservice gone FILE         the push service forgets that subscription (answers 410)
//	pushservice wait N            waits until N pushes came, then prints each: ENDPOINT-PATH subject=... urgency=... payload
func pushService(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		pushServices.Store(ts, pushtest.Start(deferrer{ts}))
		return
	}
	v, ok := pushServices.Load(ts)
	if !ok {
		ts.Fatalf("pushservice: start it first")
	}
	svc := v.(*pushtest.Service)
	switch {
	case len(args) == 2 && args[0] == "subscribe":
		data, _ := json.Marshal(svc.Subscribe())
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), data, 0o644))
	case len(args) == 2 && args[0] == "gone":
		var sub pushtest.Subscription
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &sub))
		svc.Answer(sub.Endpoint, http.StatusGone)
	case len(args) == 2 && args[0] == "wait":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		pushes := svc.Wait(n, 20*time.Second)
		if len(pushes) < n {
			ts.Fatalf("%d pushes came, want %d; refused: %v", len(pushes), n, svc.Errors())
		}
		for _, p := range pushes {
			fmt.Fprintf(ts.Stdout(), "%s subject=%s urgency=%s %s\n", strings.TrimPrefix(p.Endpoint, svc.URL()), p.Subject, p.Urgency, p.Payload)
		}
	default:
		ts.Fatalf("usage: pushservice [subscribe FILE | gone FILE | wait N]")
	}
}
