package guest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
	"time"
)

// claimTimeout is how long an accepted reverse-tunnel connection waits to be claimed
// with Tunnels.Accept before it is dropped.
const claimTimeout = 30 * time.Second

// pendingConns holds connections accepted by Tunnels.Listen until Tunnels.Accept claims
// them. It is shared by every connection of a Server, so a connection may be claimed on
// another stream or session than the one that announced it.
type pendingConns struct {
	mu     sync.Mutex
	conns  map[string]*pendingConn
	owners uint64
}

type pendingConn struct {
	conn  net.Conn
	owner uint64
	timer *time.Timer
}

func newPendingConns() *pendingConns {
	return &pendingConns{conns: map[string]*pendingConn{}}
}

// newOwner returns a fresh key for the connections of one listener.
func (p *pendingConns) newOwner() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owners++
	return p.owners
}

// add holds conn for owner and returns its id. Unless claimed within claimTimeout, conn
// is closed and forgotten.
func (p *pendingConns) add(owner uint64, conn net.Conn) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[id] = &pendingConn{
		conn:  conn,
		owner: owner,
		timer: time.AfterFunc(claimTimeout, func() {
			if c := p.claim(id); c != nil {
				c.Close()
			}
		}),
	}
	return id
}

// claim removes the connection id from the table and returns it, or nil when there is
// no such connection (never announced, expired or already claimed).
func (p *pendingConns) claim(id string) net.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.conns[id]
	if !ok {
		return nil
	}
	delete(p.conns, id)
	pc.timer.Stop()
	return pc.conn
}

// drop closes and forgets every unclaimed connection of owner.
func (p *pendingConns) drop(owner uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, pc := range p.conns {
		if pc.owner == owner {
			delete(p.conns, id)
			pc.timer.Stop()
			pc.conn.Close()
		}
	}
}
