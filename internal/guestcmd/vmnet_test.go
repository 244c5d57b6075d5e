package guestcmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/testenv"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// TestNetworkUp configures an interface as a microVM's init does for --network open, in
// a network namespace of the test's own holding a TAP device (the kind of device a
// VM's network interface stands for here), and reads the result back with iproute2:
// the address, the interface up, the default route through the gateway, the resolver.
func TestNetworkUp(t *testing.T) {
	ip := testenv.Program(t, "ip", "sudo apt-get install iproute2")
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to make a network namespace and a TAP device", "run the test as root")
	}
	done := make(chan struct{})
	var out string
	var failure error
	go func() {
		defer close(done)
		// The namespace is this thread's alone; the thread ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			failure = err
			return
		}
		// Children forked from this thread share its namespace.
		if b, err := exec.Command(ip, "tuntap", "add", "dev", "vm0", "mode", "tap").CombinedOutput(); err != nil {
			failure, out = fmt.Errorf("make a TAP device: %v", err), string(b)
			return
		}
		resolv := filepath.Join(t.TempDir(), "resolv.conf")
		os.Symlink("/run/systemd/resolve/stub-resolv.conf", resolv) // as an image may have it
		if failure = networkUp(vmspec.UserNetwork, time.Second, resolv); failure != nil {
			return
		}
		var sb strings.Builder
		for _, args := range [][]string{{"-4", "-o", "addr", "show", "dev", "vm0"}, {"-o", "link", "show", "vm0"}, {"-4", "route"}} {
			b, err := exec.Command(ip, args...).CombinedOutput()
			if err != nil {
				failure = err
			}
			sb.Write(b)
		}
		data, err := os.ReadFile(resolv)
		if err != nil {
			failure = err
		}
		sb.WriteString("resolv: " + string(data))
		out = sb.String()
	}()
	<-done
	if failure != nil {
		t.Fatalf("%v: %s", failure, out)
	}
	t.Logf("after networkUp:\n%s", out)
	for _, want := range []string{"inet 10.0.2.15/24", "MULTICAST,UP>", "default via 10.0.2.2 dev vm0", "10.0.2.0/24 dev vm0", "resolv: nameserver 10.0.2.3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the namespace's network lacks %q", want)
		}
	}
}
