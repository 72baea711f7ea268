package edge

import (
	"net"
	"sync"
	"time"
)

// DefaultMaxConns is the connection cap of Listener when it is given 0.
// Every connection holds a file descriptor (an upload one more, for its
// spool), so the cap must stay well below the process's RLIMIT_NOFILE.
const DefaultMaxConns = 4096

// refusal is what a connection past the cap is told before it is closed.
const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 60\r\n\r\nService Unavailable: too many connections; retry in a second"

// refuseTimeout bounds the write of the refusal: a client that does not
// read it loses it.
const refuseTimeout = time.Second

// Listener returns l holding at most maxConns connections open at once (0:
// DefaultMaxConns; negative: no cap); refused is called for each
// connection refused (resourced_limited_total{reason="connections"}). Unlike a listener that blocks in
// Accept at its cap (golang.org/x/net/netutil.LimitListener), which would
// leave new clients hanging in the kernel's backlog for as long as the
// connections it holds live, a connection past the cap is accepted,
// answered 503 with Retry-After: 1 on a goroutine of its own (its write
// bounded by a second) and closed, so the accept loop never waits and the
// client knows what happened.
func Listener(l net.Listener, maxConns int, refused func()) net.Listener {
	if maxConns == 0 {
		maxConns = DefaultMaxConns
	}
	if maxConns < 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, maxConns), refused: refused}
}

type limitListener struct {
	net.Listener
	slots   chan struct{}
	refused func()
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		l.refused()
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(refuseTimeout))
			_, _ = c.Write([]byte(refusal))
			_ = c.Close()
		}()
	}
}

// limitConn gives its slot back once, when it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
