// Package stdioconn makes a command's stdin and stdout one net.Conn, for the protocols
// served on them: the guest's (`guest serve --stdio`) and the SSH gate's (`ssh-proxy`).
package stdioconn

import (
	"io"
	"net"
	"time"
)

// New makes a reader and a writer (a command's stdin and stdout) one net.Conn. Closing
// it closes both, when they can be closed; its deadlines are not kept.
func New(r io.Reader, w io.Writer) net.Conn { return &pipeConn{r: r, w: w} }

type pipeConn struct {
	r io.Reader
	w io.Writer
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *pipeConn) Close() error {
	if cl, ok := c.w.(io.Closer); ok {
		cl.Close()
	}
	if cl, ok := c.r.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
func (c *pipeConn) LocalAddr() net.Addr                { return stdioAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr               { return stdioAddr{} }
func (c *pipeConn) SetDeadline(t time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return nil }

type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "stdio" }
