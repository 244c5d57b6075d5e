package session

import (
	"errors"
	"strconv"
	"testing"

	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/limitbuf"
)

// TestRunRefusesTooMuchOutput: a command that prints more than run takes is an error,
// not its output held whole (or cut and taken as whole).
func TestRunRefusesTooMuchOutput(t *testing.T) {
	c, _ := guesttest.Connect(t)
	out, _, err := run(t.Context(), c, "head", "-c", strconv.Itoa(2*maxOutput), "/dev/zero")
	var tooLarge *limitbuf.TooLargeError
	if !errors.As(err, &tooLarge) || len(out) > maxOutput {
		t.Fatalf("took %d bytes, err %v", len(out), err)
	}
	// Both streams whole; the two arrive apart, in either order.
	out, code, err := run(t.Context(), c, "sh", "-c", "echo hi; echo there >&2")
	if err != nil || code != 0 || out != "hi\nthere\n" && out != "there\nhi\n" {
		t.Fatalf("a short output: %q, exit %d, err %v", out, code, err)
	}
}
