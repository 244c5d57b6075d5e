package conform

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
)

func execOpts(argv ...string) guestclient.ExecOptions { return guestclient.ExecOptions{Argv: argv} }

func sleepShort() { time.Sleep(50 * time.Millisecond) }

// freeLoopbackPort finds a port nobody listens on in the sandbox's loopback.
func freeLoopbackPort(t T, sb *sandbox) uint32 {
	t.Helper()
	for p := 20000 + time.Now().Nanosecond()%20000; ; p++ {
		code, _, _ := sb.run(t, fmt.Sprintf("grep -qi ':%04X ' /proc/net/tcp", p))
		if code != 0 {
			return uint32(p)
		}
	}
}

// testNetwork checks the sandbox has loopback only: no other interface, no route, and
// the host's own loopback services are out of reach.
func testNetwork(t T, sb *sandbox) {
	ifaces := sb.mustRun(t, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	if ifaces != "lo" {
		t.Errorf("network interfaces in the sandbox: %q, want only lo", ifaces)
	}
	if routes := sb.mustRun(t, "tail -n +2 /proc/net/route | wc -l"); routes != "0" {
		t.Errorf("the sandbox has %s IPv4 routes, want none", routes)
	}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := host.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := host.Addr().(*net.TCPAddr).Port
	// bash's /dev/tcp makes the connection; without bash the check would pass unproven.
	if code, _, _ := runWith(t, sb.client, execOpts("sh", "-c", "command -v bash")); code != 0 {
		t.Fatal("bash is missing in the sandbox: the loopback check connects with bash's /dev/tcp")
	}
	script := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && echo connected"
	code, out, _ := runWith(t, sb.client, execOpts("bash", "-c", script))
	if code == 0 || strings.Contains(out, "connected") {
		t.Errorf("the sandbox reached a host loopback service on port %d", port)
	}
	select {
	case <-accepted:
		t.Error("the host listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
}
