// Package portmux carries any number of guest connections over one byte stream that
// cannot be dialled more than once: a VM's virtio-console port, which the host reaches
// as one unix socket of the monitor. The host side opens a yamux session over the port
// and each Dial is a stream of it; the guest side serves each stream as a connection.
//
// A port outlives the host's connection to it: the daemon may go and come back while
// the VM runs, and bytes of the old session may still sit in either direction. So each
// session begins with a hello carrying a fresh nonce, said until the guest answers it,
// and a go once it has; both sides skip whatever comes before the line they wait for,
// and the guest starts a new session whenever the old one ends.
//
// The package is used by the guest: it must not import the daemon's packages.
package portmux

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// The hello's and the answer's prefixes; a line is a prefix, the nonce and "\n".
const (
	helloPrefix = "paddock-port-hello "
	readyPrefix = "paddock-port-ready "
	goPrefix    = "paddock-port-go "
	// maxSkip bounds what a side reads before the line it waits for.
	maxSkip = 64 << 20
)

// Config is the yamux configuration of a port's session: keepalives find a VM gone.
func Config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = 16 << 20
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 10 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	c.AcceptBacklog = 1024
	return c
}

// Client starts the host side of a session over conn (the monitor's socket of the
// port): it says hello until the guest answers, then go, until ctx is done. Each stream
// opened on the session is one guest connection.
func Client(ctx context.Context, conn net.Conn) (*yamux.Session, error) {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	id := hex.EncodeToString(nonce)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	// The guest may not be reading yet (still booting) and skips what it cannot use:
	// the hello is said again until it answers.
	var mu sync.Mutex
	answered := false
	go func() {
		for {
			mu.Lock()
			if answered {
				mu.Unlock()
				return
			}
			_, err := io.WriteString(conn, helloPrefix+id+"\n")
			mu.Unlock()
			if err != nil {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	br := bufio.NewReaderSize(conn, 64<<10)
	err := skipTo(br, readyPrefix+id+"\n")
	mu.Lock()
	answered = true
	if err == nil {
		_, err = io.WriteString(conn, goPrefix+id+"\n")
	}
	mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the guest did not answer on its port: %w", ctx.Err())
		}
		return nil, fmt.Errorf("the guest's port: %w", err)
	}
	if !stop() {
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	return yamux.Client(&bufferedConn{Conn: conn, r: br}, Config())
}

// Serve is the guest side: it serves sessions on port, one after another, handing each
// stream to serve, until ctx is done or the port fails. A session that ends (the host
// went) is followed by the next hello.
func Serve(ctx context.Context, port io.ReadWriteCloser, serve func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { port.Close() })
	defer stop()
	br := bufio.NewReaderSize(port, 64<<10)
	for ctx.Err() == nil {
		err := handshake(br, port)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				// No host on the port: a console port reads as ended until one comes.
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return err
		}
		w := newCoalescer(port)
		sess, err := yamux.Server(&bufferedConn{Conn: portConn{port}, r: br, w: w}, Config())
		if err != nil {
			return err
		}
		for {
			c, err := sess.Accept()
			if err != nil {
				break
			}
			go serve(c)
		}
		sess.Close()
		w.Close()
	}
	return ctx.Err()
}

// ServeConn is the guest side of one connection that carries one session and ends
// with it: a vsock connection, each of which the host dials afresh (the console port
// of Serve is one stream for the VM's life). It returns when the session ends.
func ServeConn(ctx context.Context, conn io.ReadWriteCloser, serve func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	if err := handshake(br, conn); err != nil {
		return err
	}
	w := newCoalescer(conn)
	defer func() {
		conn.Close() // first: a write under way ends with it
		w.Close()
	}()
	sess, err := yamux.Server(&bufferedConn{Conn: portConn{conn}, r: br, w: w}, Config())
	if err != nil {
		return err
	}
	defer sess.Close()
	for {
		c, err := sess.Accept()
		if err != nil {
			return ctx.Err()
		}
		go serve(c)
	}
}

// handshake is the guest's side of a session's start: it answers each hello it reads
// (the last one wins: a host that came back says a new one) and returns once it reads
// go for the hello it answered.
func handshake(br *bufio.Reader, w io.Writer) error {
	answered := ""
	for skipped := 0; skipped < maxSkip; {
		line, err := br.ReadString('\n')
		skipped += len(line)
		if err != nil {
			return err
		}
		if i := strings.LastIndex(line, helloPrefix); i >= 0 {
			id := strings.TrimSuffix(line[i+len(helloPrefix):], "\n")
			if len(id) == 32 && id != answered {
				if _, err := io.WriteString(w, readyPrefix+id+"\n"); err != nil {
					return err
				}
				answered = id
			}
			continue
		}
		if answered != "" && strings.HasSuffix(line, goPrefix+answered+"\n") {
			return nil
		}
	}
	return errors.New("no hello from the host")
}

// skipTo reads until want (a whole line) has been read.
func skipTo(br *bufio.Reader, want string) error {
	for skipped := 0; skipped < maxSkip; {
		line, err := br.ReadString('\n')
		skipped += len(line)
		if strings.HasSuffix(line, want) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return errors.New("no answer from the guest")
}

// bufferedConn is a net.Conn whose reads come through r (holding bytes read ahead) and,
// when w is set, whose writes go through w.
type bufferedConn struct {
	net.Conn
	r io.Reader
	w io.Writer
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufferedConn) Write(p []byte) (int, error) {
	if c.w != nil {
		return c.w.Write(p)
	}
	return c.Conn.Write(p)
}

// portConn is a port (a character device) as a net.Conn, for yamux.
type portConn struct{ io.ReadWriteCloser }

func (portConn) LocalAddr() net.Addr              { return portAddr{} }
func (portConn) RemoteAddr() net.Addr             { return portAddr{} }
func (portConn) SetDeadline(time.Time) error      { return nil }
func (portConn) SetReadDeadline(time.Time) error  { return nil }
func (portConn) SetWriteDeadline(time.Time) error { return nil }
func (c portConn) Close() error                   { return nil } // the port is Serve's to close
var _ net.Conn = portConn{}

type portAddr struct{}

func (portAddr) Network() string { return "virtio-port" }
func (portAddr) String() string  { return "virtio-port" }
