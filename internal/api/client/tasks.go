package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
)

func taskPath(name string, rest ...string) string {
	p := "/v1/tasks/" + url.PathEscape(name)
	for _, r := range rest {
		p += r
	}
	return p
}

// CreateTask records a task and starts its attempts; the daemon prepares them in the
// background, so the task comes back preparing.
func (c *Client) CreateTask(ctx context.Context, req wire.TaskCreateRequest) (wire.Task, error) {
	var out wire.Task
	return out, c.postJSON(ctx, "/v1/tasks", req, &out)
}

// Tasks lists every task, each with its attempts ranked.
func (c *Client) Tasks(ctx context.Context) ([]wire.Task, error) {
	var out []wire.Task
	return out, c.Do(ctx, http.MethodGet, "/v1/tasks", nil, &out)
}

// Task returns a task, its attempts ranked, the best first.
func (c *Client) Task(ctx context.Context, name string) (wire.Task, error) {
	var out wire.Task
	return out, c.Do(ctx, http.MethodGet, taskPath(name), nil, &out)
}

// RemoveTask removes a task's attempts' sandboxes, each after a final snapshot, then the
// task, reporting progress.
func (c *Client) RemoveTask(ctx context.Context, name string, progress func(string)) error {
	resp, err := c.stream(ctx, http.MethodDelete, taskPath(name), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = readProgress(resp.Body, progress)
	return err
}

// ReviewAttempt sends a comment to an attempt's agent as its next message.
func (c *Client) ReviewAttempt(ctx context.Context, name string, n int, req wire.ReviewRequest) (wire.Attempt, error) {
	var out wire.Attempt
	return out, c.postJSON(ctx, taskPath(name, "/attempts/", strconv.Itoa(n), "/review"), req, &out)
}

// LandTask puts an attempt of a task in its merge queue, or opens its pull request.
func (c *Client) LandTask(ctx context.Context, name string, req wire.LandRequest) (wire.QueueEntry, error) {
	var out wire.QueueEntry
	return out, c.postJSON(ctx, taskPath(name, "/land"), req, &out)
}

// LandSandbox puts a plain sandbox's branch in the merge queue of its host repository
// and branch (paddock merge --queue).
func (c *Client) LandSandbox(ctx context.Context, name string, req wire.SandboxLandRequest) (wire.QueueEntry, error) {
	var out wire.QueueEntry
	return out, c.postJSON(ctx, "/v1/sandboxes/"+url.PathEscape(name)+"/land", req, &out)
}

// Queue lists the merge queue's entries, oldest first; with task set, only its.
func (c *Client) Queue(ctx context.Context, task string) ([]wire.QueueEntry, error) {
	var out []wire.QueueEntry
	q := ""
	if task != "" {
		q = "?task=" + url.QueryEscape(task)
	}
	return out, c.Do(ctx, http.MethodGet, "/v1/queue"+q, nil, &out)
}

// DropEntry takes an open entry out of the merge queue.
func (c *Client) DropEntry(ctx context.Context, id int64) (wire.QueueEntry, error) {
	var out wire.QueueEntry
	return out, c.Do(ctx, http.MethodDelete, "/v1/queue/"+strconv.FormatInt(id, 10), nil, &out)
}
