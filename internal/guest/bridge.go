package guest

import (
	"errors"
	"io"
	"net"
)

// bridgeThreads is how many idle threads the bridge keeps: it has two copies running and
// nothing else, but a thread it cannot make ends it, and with it the daemon's connection.
const bridgeThreads = 4

// Bridge copies between in and out and the resident guest's unix socket until either side
// ends. It is `paddock guest connect`, the channel of backends that reach the guest by
// exec, so it runs inside the sandbox under its pids limit: it keeps spare threads as the
// guest does, so a fork bomb inside cannot cut the daemon's connection.
func Bridge(socket string, in io.Reader, out io.Writer) error {
	reserveOnce.Do(func() { reserveThreads(bridgeThreads) })
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	errc := make(chan error, 2)
	go func() {
		_, err := io.Copy(conn, in)
		conn.(*net.UnixConn).CloseWrite()
		errc <- err
	}()
	go func() { _, err := io.Copy(out, conn); errc <- err }()
	return errors.Join(<-errc)
}
