package guest

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// TestOutputAfterDeadline: output a process wrote before it exited is sent even when the
// guest comes to read it only after the grace has passed and the read deadline is set
// (a loaded guest: hundreds of processes ending at once), and the pipe is held open by
// something the process left running. Before, the read failed at the deadline and the
// output was lost, the exit status sent as if none had been written.
func TestOutputAfterDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // held open: a child left running
	// All it wrote is in the pipe (it has exited): more than one read's worth, less
	// than the pipe holds.
	want := strings.Repeat("the process's last words\n", 2000)
	if _, err := w.WriteString(want); err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now()) // the grace passed before the pump read anything

	var (
		mu  sync.Mutex
		got strings.Builder
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pumpOutput(output{f: r}, func(m *guestpb.ExecResponse) error {
			mu.Lock()
			defer mu.Unlock()
			got.Write(m.GetStdout())
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pump waited for more output past its deadline")
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Len() != len(want) || got.String() != want {
		t.Errorf("sent %d bytes of the %d the pipe held", got.Len(), len(want))
	}
}
