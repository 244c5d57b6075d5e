package guest

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestOutputDrainBounded: a process's child left running that writes without end, the
// pipe held open, cannot keep the exec from ending: past the deadline the guest sends at
// most outputDrainMax more bytes and stops.
func TestOutputDrainBounded(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer w.Close()
		chunk := make([]byte, 4<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	r.SetReadDeadline(time.Now())
	sent := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		pumpOutput(output{f: r}, func(m *guestpb.ExecResponse) error {
			sent += len(m.GetStdout())
			// Wait for the writer to have written again (TIOCINQ is FIONREAD): the pipe
			// is never empty when the guest reads next.
			for n := 0; n == 0; time.Sleep(100 * time.Microsecond) {
				n, _ = unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the pump kept sending past its deadline for a writer without end")
	}
	if sent > outputDrainMax+outputBufferSize {
		t.Errorf("sent %d bytes past the deadline, more than the bound %d", sent, outputDrainMax)
	}
}
