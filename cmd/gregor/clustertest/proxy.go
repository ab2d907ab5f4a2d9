package clustertest

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections from its own loopback address to a
// target. Cut stops forwarding without closing anything: bytes already
// read are held, new connections are accepted but not dialled through,
// so peers see silence, as across a network partition, rather than a
// reset. Resume delivers what was held and forwards again.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	resumed chan struct{} // closed by Resume; replaced by each Cut
	closed  bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy listens on listenAddr ("127.0.0.1:0" picks a port) and forwards
// every connection to target.
func NewProxy(listenAddr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's own address, the one to give clients.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut stops forwarding in both directions on every connection, old and new.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.cut = true
		p.resumed = make(chan struct{})
	}
}

// Resume forwards again, starting with the bytes held while cut.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		p.cut = false
		close(p.resumed)
	}
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// DropConnections closes every open connection on both sides (peers see
// their connections reset); the proxy keeps accepting new ones.
func (p *Proxy) DropConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.cut {
		close(p.resumed)
	}
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers a connection so that Close and DropConnections reach
// it; it reports false, having closed c, when the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// gate blocks while the proxy is cut; it reports false once it is closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.cut && !p.closed {
		ch := p.resumed
		p.mu.Unlock()
		<-ch
		p.mu.Lock()
	}
	return !p.closed
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve dials the target once the proxy is not cut and copies both ways
// until either side closes.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.gate() {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return // the client sees the connection close, as a refused dial
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(server, client) }()
	go func() { defer both.Done(); p.pipe(client, server) }()
	both.Wait()
}

// pipe copies src to dst through the gate, and closes both when either
// side ends so that the other copy ends too.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
