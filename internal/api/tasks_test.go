package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/task"
)

// TestTasksForTheOwner: a daemon without tasks says so; with them, the tasks are the
// daemon owner's: the socket, a host token and an admin see them, a team member signed in
// over TCP is refused on every task route, reading or not.
func TestTasksForTheOwner(t *testing.T) {
	tt := newTeamTest(t)
	ctx := context.Background()
	var e ErrorBody
	if code := tt.onSocket("GET", "/v1/tasks", "", &e); code != http.StatusServiceUnavailable || !strings.Contains(e.Error.Message, "this daemon keeps no tasks") {
		t.Fatalf("GET /v1/tasks on a daemon without tasks: %d %+v", code, e)
	}

	st := tt.srv.svc.Store()
	tt.srv.EnableTasks(task.New(ctx, task.Options{Sandboxes: tt.srv.svc, Store: st}), nil)
	tt.local = tt.srv.Handler()
	tt.ts.Config.Handler = tt.srv.Remote(RemoteOptions{API: tt.local, Loopback: true})
	now := time.Now()
	if err := st.AddTask(ctx, wire.Task{Name: "greet", Repo: "/src/app", Prompt: "say hello", State: wire.TaskDone,
		Attempts: []wire.Attempt{{N: 1, Agent: "shell", State: wire.AttemptDone}}, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	var list []wire.Task
	if code := tt.onSocket("GET", "/v1/tasks", "", &list); code != http.StatusOK || len(list) != 1 || list[0].Name != "greet" {
		t.Fatalf("GET /v1/tasks on the socket: %d %+v", code, list)
	}
	tok := tt.token("laptop", false)
	if a := tt.do("GET", "/v1/tasks/greet", "", bearer(tok)...); a.status != http.StatusOK || !strings.Contains(a.body, `"name":"greet"`) {
		t.Errorf("GET /v1/tasks/greet with a host token: %d %s", a.status, a.body)
	}

	bob, root := tt.signIn("bob"), tt.signIn("root")
	for _, path := range []string{"/v1/tasks", "/v1/tasks/greet", "/v1/queue", "/v1/queue?task=greet"} {
		if code, body := get(t, bob, tt.ts.URL+path); code != http.StatusForbidden || !strings.Contains(body, "tasks are the daemon owner's") {
			t.Errorf("bob GET %s: %d %s", path, code, body)
		}
	}
	req, _ := http.NewRequest("POST", tt.ts.URL+"/v1/tasks/greet/land", strings.NewReader(`{}`))
	req.Header.Set("Origin", tt.ts.URL)
	resp, err := bob.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "tasks are the daemon owner's") {
		t.Errorf("bob lands a task: %d %s", resp.StatusCode, data)
	}
	if code, body := get(t, root, tt.ts.URL+"/v1/tasks/greet"); code != http.StatusOK || !strings.Contains(body, `"name":"greet"`) {
		t.Errorf("the admin GET /v1/tasks/greet: %d %s", code, body)
	}
}
