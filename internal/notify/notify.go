// Package notify tells the user, away from the terminal, that a session waits for them,
// finished its turn or ended: through a webhook of the config (ntfy, Slack or plain
// JSON bodies) and through Web Push to every browser that subscribed from the web UI.
//
// The Notifier follows the daemon's event bus. Deliveries never hold up the bus: each
// goes on a bounded queue served by a few workers, and one that fails for a reason that
// may pass (a network error, 429, 5xx) is tried again with backoff, a few times.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/store"
)

// What a notification is about: the values of config.NotifyEvents.
const (
	Waiting  = "waiting"
	Finished = "finished"
	Exited   = "exited"
	// Budget is a budget 80% spent, or spent (the meter's budget-warning and
	// budget-spent events).
	Budget = "budget"
	// Alarm is an agent that went for its own controls (the alarm event).
	Alarm = "alarm"
	// Task is a task's news: an attempt passed its checks, every attempt is done, a
	// landing conflicts and waits for an answer, an attempt landed (internal/task's
	// events).
	Task = "task"
	// Test is a notification sent by `paddock notify test`.
	Test = "test"
)

const (
	queueSize = 256
	workers   = 4
	// attempts is how many times a delivery is tried before it is given up.
	attempts = 5
	// dedup is how long the same news of the same session is not repeated.
	dedup = 30 * time.Second
)

// Message is one notification, whatever carries it.
type Message struct {
	// What is Waiting, Finished, Exited or Test.
	What    string `json:"what"`
	Sandbox string `json:"sandbox,omitempty"`
	Session string `json:"session,omitempty"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	// URL opens the session in the web UI; empty when no web UI address is known.
	URL  string    `json:"url,omitempty"`
	Time time.Time `json:"time"`
}

// Tag identifies the session a message is about, so a phone replaces the previous
// notification of the same session instead of stacking them.
func (m Message) Tag() string { return "paddock:" + m.Sandbox + "/" + m.Session }

// Target is wire.NotifyTarget.
type Target = wire.NotifyTarget

// Result is wire.NotifyResult.
type Result = wire.NotifyResult

// Options configure a Notifier.
type Options struct {
	Config config.Notify
	Store  *store.Store
	// StateDir holds the VAPID key pair (vapid.json).
	StateDir string
	// BaseURL returns the web UI's address for links when the config has none ("" when
	// paddock web serves nothing).
	BaseURL func() string
	Logger  *slog.Logger
	// Client sends the requests; nil means one with a 10 s timeout.
	Client *http.Client
	// Getenv reads the daemon's environment for ${NAME} in webhook headers.
	Getenv func(string) string
	// Backoff is the wait before the first retry, doubled for each next (0: 1 s).
	Backoff time.Duration
}

// Notifier turns the daemon's events into notifications.
type Notifier struct {
	opts Options
	log  *slog.Logger
	keys vapidKeys
	jobs chan job

	mu   sync.Mutex
	last map[string]sent // by sandbox/session
	// status is each session's last status, to tell a turn that finished (working,
	// then idle) from an agent that merely started idle.
	status map[string]string
}

type sent struct {
	what string
	at   time.Time
}

// job is one delivery: a message to one target.
type job struct {
	msg     Message
	target  string // "webhook" or a subscription id
	push    *store.PushSubscription
	attempt int
}

// New returns a Notifier; its VAPID keys are made on first use and kept in StateDir.
func New(opts Options) (*Notifier, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Backoff == 0 {
		opts.Backoff = time.Second
	}
	if opts.BaseURL == nil {
		opts.BaseURL = func() string { return "" }
	}
	keys, err := loadVAPID(opts.StateDir)
	if err != nil {
		return nil, err
	}
	return &Notifier{opts: opts, log: opts.Logger, keys: keys, jobs: make(chan job, queueSize),
		last: map[string]sent{}, status: map[string]string{}}, nil
}

// PublicKey is the VAPID public key browsers subscribe with (base64url, uncompressed point).
func (n *Notifier) PublicKey() string { return n.keys.Public }

// Start follows bus and delivers, in goroutines of its own, until ctx ends. It subscribes
// before it returns, so that no event published after Start is missed (one published
// while a goroutine was still on its way to subscribing was).
func (n *Notifier) Start(ctx context.Context, bus *events.Bus) {
	for range workers {
		go n.work(ctx)
	}
	sub := subscribe(bus)
	go func() {
		for {
			n.follow(ctx, sub)
			sub.Close()
			if ctx.Err() != nil {
				return
			}
			sub = subscribe(bus) // it fell behind: follow what comes next
		}
	}()
}

// taskNews words the title of each task event that is news, after the task's name
// (%s: the attempt's number).
var taskNews = map[string]string{
	"task-attempt-passed": "attempt %s passed its checks",
	"task-done":           "every attempt is done",
	"task-conflict":       "attempt %s conflicts: it needs an answer",
	"task-landed":         "attempt %s landed",
}

// subscribe follows the events a notification may come of.
func subscribe(bus *events.Bus) *events.Subscription {
	return bus.Subscribe(0, func(ev events.Event) bool {
		return ev.Kind == "session-status" || ev.Kind == "session-exited" || ev.Kind == "session-removed" ||
			ev.Kind == "budget-warning" || ev.Kind == "budget-spent" || ev.Kind == "alarm" || taskNews[ev.Kind] != ""
	})
}

func (n *Notifier) follow(ctx context.Context, sub *events.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			n.log.Warn("notifications fell behind the event stream; some were not sent")
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			if msg, ok := n.decide(ev); ok {
				n.Send(msg)
			}
		}
	}
}

// decide says whether ev is news the user asked to hear about, and words it.
func (n *Notifier) decide(ev events.Event) (Message, bool) {
	key := ev.Sandbox + "/" + ev.Session
	n.mu.Lock()
	defer n.mu.Unlock()
	var what string
	switch ev.Kind {
	case "session-removed":
		delete(n.status, key)
		delete(n.last, key)
		return Message{}, false
	case "session-exited":
		what = Exited
	case "budget-warning", "budget-spent":
		what = Budget
		key += " " + ev.Kind
	case "alarm":
		what = Alarm
		key += " alarm " + ev.Attrs["id"] // each alarm is news
	case "task-attempt-passed", "task-done", "task-conflict", "task-landed":
		what = Task
		key += " " + ev.Kind
	case "session-status":
		status := ev.Attrs["status"]
		prev := n.status[key]
		n.status[key] = status
		switch {
		case status == "waiting":
			what = Waiting
		case status == "idle" && prev == "working":
			what = Finished
		default:
			return Message{}, false
		}
	default:
		return Message{}, false
	}
	if (ev.Session == "" && what != Budget && what != Alarm && what != Task) || !n.wants(what) {
		return Message{}, false
	}
	now := ev.Time
	if now.IsZero() {
		now = time.Now()
	}
	if l, ok := n.last[key]; ok && l.what == what && now.Sub(l.at) < dedup {
		return Message{}, false
	}
	n.last[key] = sent{what: what, at: now}
	msg := Message{What: what, Sandbox: ev.Sandbox, Session: ev.Session, Time: now}
	name := ev.Sandbox + "/" + ev.Session
	switch what {
	case Waiting:
		msg.Title, msg.Body = name+" is waiting for you", "The agent needs an answer or a permission."
	case Finished:
		msg.Title, msg.Body = name+" finished", "The agent ended its turn."
	case Exited:
		msg.Title, msg.Body = name+" exited", ev.Detail
	case Budget:
		name = strings.TrimSuffix(name, "/")
		msg.Title, msg.Body = name+": 80% of its budget spent", ev.Detail
		if ev.Kind == "budget-spent" {
			msg.Title = name + ": budget spent, the agent is stopped"
		}
	case Alarm:
		name = strings.TrimSuffix(name, "/")
		msg.Title, msg.Body = name+": alarm: the agent went for its own controls", ev.Detail
	case Task:
		if ev.Attrs["task"] == "" { // a plain sandbox's branch in the merge queue (merge --queue)
			title := fmt.Sprintf("%s: %s landed on %s", ev.Sandbox, ev.Attrs["branch"], ev.Attrs["into"])
			if ev.Kind == "task-conflict" {
				title = fmt.Sprintf("%s: %s conflicts with %s: it needs an answer", ev.Sandbox, ev.Attrs["branch"], ev.Attrs["into"])
			}
			msg.Title, msg.Body = title, ev.Detail
			msg.URL = n.link(ev.Sandbox, "")
			return msg, true
		}
		title := taskNews[ev.Kind]
		if strings.Contains(title, "%s") {
			title = fmt.Sprintf(title, ev.Attrs["attempt"])
		}
		msg.Title, msg.Body = ev.Attrs["task"]+": "+title, ev.Detail
		msg.URL = n.taskLink(ev.Attrs["task"], ev.Attrs["attempt"])
		return msg, true
	}
	msg.URL = n.link(ev.Sandbox, ev.Session)
	return msg, true
}

func (n *Notifier) wants(what string) bool {
	return len(n.opts.Config.Events) == 0 || slices.Contains(n.opts.Config.Events, what)
}

// link is the web UI's page of the session, or "" when there is no web UI address.
func (n *Notifier) link(sandbox, session string) string {
	base := n.opts.Config.URL
	if base == "" {
		base = n.opts.BaseURL()
	}
	if base == "" {
		return ""
	}
	base = strings.TrimSuffix(base, "/")
	if sandbox == "" {
		return base + "/"
	}
	u := base + "/s/" + url.PathEscape(sandbox)
	if session != "" {
		u += "/" + url.PathEscape(session)
	}
	return u
}

// taskLink is the web UI's page of a task, or of one of its attempts.
func (n *Notifier) taskLink(task, attempt string) string {
	base := n.opts.Config.URL
	if base == "" {
		base = n.opts.BaseURL()
	}
	if base == "" || task == "" {
		return ""
	}
	u := strings.TrimSuffix(base, "/") + "/t/" + url.PathEscape(task)
	if attempt != "" {
		u += "/" + url.PathEscape(attempt)
	}
	return u
}

// Send queues msg for every target. It never blocks: with the queue full, the message is
// dropped and logged.
func (n *Notifier) Send(msg Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	targets, err := n.targets(ctx)
	if err != nil {
		n.log.Error("read push subscriptions", "err", err)
	}
	for _, tj := range targets {
		tj.j.msg = msg
		n.enqueue(tj.j)
	}
}

func (n *Notifier) enqueue(j job) {
	select {
	case n.jobs <- j:
	default:
		n.log.Warn("notification queue full: dropped", "target", j.target, "title", j.msg.Title)
	}
}

func (n *Notifier) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-n.jobs:
			n.run(ctx, j)
		}
	}
}

// run delivers one job, scheduling a retry when the failure may pass.
func (n *Notifier) run(ctx context.Context, j job) {
	err := n.deliver(ctx, j)
	if err == nil {
		return
	}
	j.attempt++
	var de *deliveryError
	retry := !errors.As(err, &de) || de.retry
	if !retry || j.attempt >= attempts {
		n.log.Warn("notification not delivered", "target", j.target, "title", j.msg.Title, "attempts", j.attempt, "err", err)
		return
	}
	wait := n.opts.Backoff << (j.attempt - 1)
	n.log.Info("notification failed; trying again", "target", j.target, "in", wait, "err", err)
	time.AfterFunc(wait, func() {
		if ctx.Err() == nil {
			n.enqueue(j)
		}
	})
}

// deliver sends one job once.
func (n *Notifier) deliver(ctx context.Context, j job) error {
	if j.push != nil {
		return n.push(ctx, j.push, j.msg)
	}
	return n.webhook(ctx, j.msg)
}

// Targets lists where notifications go.
func (n *Notifier) Targets(ctx context.Context) ([]Target, error) {
	jobs, err := n.targets(ctx)
	out := make([]Target, len(jobs))
	for i, j := range jobs {
		out[i] = j.t
	}
	return out, err
}

// targetJob is a target and the job that delivers to it.
type targetJob struct {
	t Target
	j job
}

// targets are the webhook, then each push subscription, read once; on a failure to read
// the subscriptions, the webhook still comes back, with the error.
func (n *Notifier) targets(ctx context.Context) ([]targetJob, error) {
	var out []targetJob
	if w := n.opts.Config.Webhook; w != "" {
		out = append(out, targetJob{Target{ID: "webhook", Kind: "webhook", Where: w, Label: n.format()}, job{target: "webhook"}})
	}
	subs, err := n.opts.Store.PushSubscriptions(ctx)
	if err != nil {
		return out, err
	}
	for i := range subs {
		t := pushTarget(subs[i])
		out = append(out, targetJob{t, job{target: t.ID, push: &subs[i]}})
	}
	return out, nil
}

// TestAll sends a test message to every target at once, each tried once, and says how
// each went.
func (n *Notifier) TestAll(ctx context.Context) ([]Result, error) {
	msg := Message{What: Test, Title: "paddock: test notification", Body: "Notifications from this paddock reach you here.",
		URL: n.link("", ""), Time: time.Now()}
	targets, err := n.targets(ctx)
	if err != nil {
		return nil, err
	}
	results := make([]Result, len(targets))
	var wg sync.WaitGroup
	for i, tj := range targets {
		tj.j.msg = msg
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Result{Target: tj.t}
			if err := n.deliver(ctx, tj.j); err != nil {
				results[i].Error = err.Error()
			}
		}()
	}
	wg.Wait()
	return results, nil
}

// deliveryError is a refusal by the receiver; retry says whether trying again may help.
type deliveryError struct {
	status int
	body   string
	retry  bool
}

func (e *deliveryError) Error() string {
	s := fmt.Sprintf("answered %d %s", e.status, http.StatusText(e.status))
	if e.body != "" {
		s += ": " + e.body
	}
	return s
}

// refusal turns a response that is not 2xx into a deliveryError.
func refusal(resp *http.Response, body []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return &deliveryError{status: resp.StatusCode, body: text,
		retry: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
}
