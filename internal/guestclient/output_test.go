package guestclient_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// TestOutputBounded: what is read of a command's output in the sandbox is bounded:
// stdout past the limit is an error, not the part that fits taken as the whole, and of
// stderr only its end is kept, for the message.
func TestOutputBounded(t *testing.T) {
	c, _ := guesttest.Connect(t)
	const max = 64 << 10
	tests := []struct {
		name     string
		script   string
		stdout   int  // bytes of stdout returned
		tooLarge bool // the output is refused
	}{
		{"stdout at the limit", "head -c " + strconv.Itoa(max) + " /dev/zero", max, false},
		{"stdout over the limit", "head -c " + strconv.Itoa(max+1) + " /dev/zero", -1, true},
		{"chatty stderr", "head -c " + strconv.Itoa(16*max) + " /dev/zero >&2; echo ok", 3, false},
	}
	for _, tt := range tests {
		stdout, stderr, code, err := c.Output(t.Context(), guestclient.ExecOptions{Argv: []string{"sh", "-c", tt.script}}, max)
		var tooLarge *limitbuf.TooLargeError
		switch {
		case errors.As(err, &tooLarge) != tt.tooLarge:
			t.Errorf("%s: err %v", tt.name, err)
		case !tt.tooLarge && (code != 0 || len(stdout) != tt.stdout):
			t.Errorf("%s: exit %d, %d bytes of stdout, want %d", tt.name, code, len(stdout), tt.stdout)
		case len(stdout) > max || len(stderr) > tailbuf.DefaultMax:
			t.Errorf("%s: holds %d bytes of stdout, %d of stderr", tt.name, len(stdout), len(stderr))
		}
	}
}
