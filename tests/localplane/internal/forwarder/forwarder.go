// Package forwarder is the plane's TCP forwarder: the HA plane's load balancer
// and each apiserver's link to etcd.
package forwarder

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
)

// Forwarder is a TCP Forwarder (no TLS termination: clients talk TLS to the
// apiserver itself, so client certificates pass): the load balancer, and each
// apiserver's link to etcd. New connections go to the current backend.
type Forwarder struct {
	name     string
	ln       net.Listener
	backends map[string]string

	mu      sync.Mutex
	target  string
	refuse  bool // closes new connections at once (a cut link)
	pairs   map[*connPair]struct{}
	opened  map[string]int64 // connections made, by backend
	refused atomic.Int64
}

// connPair is one client connection and its upstream one.
type connPair struct {
	client, upstream net.Conn
	backend          string
	held             atomic.Bool // bytes are no longer passed on (a dead backend that keeps its sockets)
	closeOnce        sync.Once
	done             chan struct{} // closed with the pair
}

func (p *connPair) close() {
	p.closeOnce.Do(func() {
		_ = p.client.Close()
		_ = p.upstream.Close()
		close(p.done)
	})
}

// Start listens on a free port of 127.0.0.1 and forwards new connections to
// backends[target]; name is for its errors.
func Start(name string, backends map[string]string, target string) (*Forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	f := &Forwarder{name: name, ln: ln, backends: backends, target: target,
		pairs: map[*connPair]struct{}{}, opened: map[string]int64{}}
	go f.serve()
	return f, nil
}

// Addr is where it listens.
func (f *Forwarder) Addr() string { return f.ln.Addr().String() }

func (f *Forwarder) serve() {
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.mu.Lock()
		refuse, backend := f.refuse, f.target
		f.mu.Unlock()
		if refuse {
			f.refused.Add(1)
			_ = client.Close()
			continue
		}
		upstream, err := net.Dial("tcp", f.backends[backend])
		if err != nil {
			_ = client.Close()
			continue
		}
		p := &connPair{client: client, upstream: upstream, backend: backend, done: make(chan struct{})}
		f.mu.Lock()
		f.pairs[p] = struct{}{}
		f.opened[backend]++
		f.mu.Unlock()
		go f.pipe(p, client, upstream)
		go f.pipe(p, upstream, client)
	}
}

// pipe copies src to dst until either side ends; a held pair's bytes are dropped
// and it stays open, silent, until it is closed.
func (f *Forwarder) pipe(p *connPair, src, dst net.Conn) {
	defer func() {
		p.close()
		f.mu.Lock()
		delete(f.pairs, p)
		f.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.held.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if p.held.Load() && src == p.upstream {
				// The backend's end reaches no client through a held connection: it stays
				// silent until the client gives up or the hold is released.
				<-p.done
			}
			return
		}
	}
}

// Route sends new connections to backend; existing ones are kept ("keep"),
// held silent ("hold") or closed ("close").
func (f *Forwarder) Route(backend, existing string) error {
	if _, ok := f.backends[backend]; !ok {
		return fmt.Errorf("%s: no backend %q (have %v)", f.name, backend, f.backendNames())
	}
	if existing != "keep" && existing != "hold" && existing != "close" {
		return fmt.Errorf("%s: existing connections are kept, held or closed, not %q", f.name, existing)
	}
	f.mu.Lock()
	f.target = backend
	pairs := f.pairsLocked()
	f.mu.Unlock()
	for _, p := range pairs {
		switch existing {
		case "hold":
			p.held.Store(true)
		case "close":
			p.close()
		}
	}
	return nil
}

// Cut closes every connection and refuses new ones until restore: a link that is gone.
func (f *Forwarder) Cut() int {
	f.mu.Lock()
	f.refuse = true
	pairs := f.pairsLocked()
	f.mu.Unlock()
	for _, p := range pairs {
		p.close()
	}
	return len(pairs)
}

// Restore accepts new connections again after Cut.
func (f *Forwarder) Restore() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = false
}

// ReleaseHeld closes the connections a route left held.
func (f *Forwarder) ReleaseHeld() int {
	f.mu.Lock()
	pairs := f.pairsLocked()
	f.mu.Unlock()
	n := 0
	for _, p := range pairs {
		if p.held.Load() {
			p.close()
			n++
		}
	}
	return n
}

func (f *Forwarder) pairsLocked() []*connPair {
	pairs := make([]*connPair, 0, len(f.pairs))
	for p := range f.pairs {
		pairs = append(pairs, p)
	}
	return pairs
}

func (f *Forwarder) backendNames() []string {
	names := make([]string, 0, len(f.backends))
	for n := range f.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Stats are its connections and state, for the control endpoint.
func (f *Forwarder) Stats() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	open, held := map[string]int{}, 0
	for p := range f.pairs {
		open[p.backend]++
		if p.held.Load() {
			held++
		}
	}
	opened := map[string]int64{}
	for k, v := range f.opened {
		opened[k] = v
	}
	return map[string]any{"target": f.target, "cut": f.refuse, "open": open, "held": held,
		"opened": opened, "refused": f.refused.Load()}
}

// Close stops listening and closes every connection.
func (f *Forwarder) Close() {
	_ = f.ln.Close()
	f.mu.Lock()
	pairs := f.pairsLocked()
	f.mu.Unlock()
	for _, p := range pairs {
		p.close()
	}
}
