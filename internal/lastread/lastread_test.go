package lastread

import (
	"context"
	"testing"
	"time"
)

// A read under way when Forget runs (a sandbox being stopped as it was listed) is no
// answer for the next Get: that one reads again, and the old read, ending after, does
// not put its answer back.
func TestForgetDropsTheReadUnderWay(t *testing.T) {
	var c Cache[string]
	ctx := context.Background()
	release, started := make(chan struct{}), make(chan struct{})
	oldDone := make(chan string)
	go func() {
		v, _, _, _ := c.Get(ctx, "sb", func(context.Context) (string, error) {
			close(started)
			<-release
			return "running", nil
		})
		oldDone <- v
	}()
	<-started
	c.Forget("sb")
	type got struct {
		v     string
		stale bool
		err   error
	}
	fresh := make(chan got, 1)
	go func() {
		v, stale, _, err := c.Get(ctx, "sb", func(context.Context) (string, error) { return "stopped", nil })
		fresh <- got{v, stale, err}
	}()
	select {
	case g := <-fresh:
		if g.err != nil || g.stale || g.v != "stopped" {
			t.Fatalf("Get after Forget: %q stale=%v %v, want a fresh stopped", g.v, g.stale, g.err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Get after Forget waited on the read Forget dropped")
	}
	close(release)
	if v := <-oldDone; v != "running" {
		t.Fatalf("the old read told its own caller %q", v)
	}
	if got := c.last["sb"].v; got != "stopped" {
		t.Fatalf("after the old read ended, the last answer is %q, want stopped", got)
	}
}
