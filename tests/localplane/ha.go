package main

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
)

// The highly available plane (--ha): a second kube-apiserver on the same etcd,
// as every managed cluster runs several behind a load balancer, each with a
// watch cache of its own. Each apiserver reaches etcd through a link of its
// own that a test can cut, so that one apiserver's cache freezes while the
// other follows etcd; clients reach them through a TCP load balancer that a
// test can move from one to the other, leaving the connections it had open
// (as a balancer whose backend went away may: held silent) or closing them.

// forwarder is a TCP forwarder (no TLS termination: clients talk TLS to the
// apiserver itself, so client certificates pass): the load balancer, and each
// apiserver's link to etcd. New connections go to the current backend.
type forwarder struct {
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

func startForwarder(name string, backends map[string]string, target string) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &forwarder{name: name, ln: ln, backends: backends, target: target,
		pairs: map[*connPair]struct{}{}, opened: map[string]int64{}}
	go f.serve()
	return f, nil
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) serve() {
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
func (f *forwarder) pipe(p *connPair, src, dst net.Conn) {
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

// route sends new connections to backend; existing ones are kept ("keep"),
// held silent ("hold") or closed ("close").
func (f *forwarder) route(backend, existing string) error {
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

// cut closes every connection and refuses new ones until restore: a link that is gone.
func (f *forwarder) cut() int {
	f.mu.Lock()
	f.refuse = true
	pairs := f.pairsLocked()
	f.mu.Unlock()
	for _, p := range pairs {
		p.close()
	}
	return len(pairs)
}

func (f *forwarder) restore() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = false
}

// releaseHeld closes the connections a route left held.
func (f *forwarder) releaseHeld() int {
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

func (f *forwarder) pairsLocked() []*connPair {
	pairs := make([]*connPair, 0, len(f.pairs))
	for p := range f.pairs {
		pairs = append(pairs, p)
	}
	return pairs
}

func (f *forwarder) backendNames() []string {
	names := make([]string, 0, len(f.backends))
	for n := range f.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (f *forwarder) stats() map[string]any {
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

func (f *forwarder) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	pairs := f.pairsLocked()
	f.mu.Unlock()
	for _, p := range pairs {
		p.close()
	}
}

// haParts are the second apiserver, the etcd links and the load balancer.
type haParts struct {
	apiserverB *childProcess
	urlB       string
	etcdLinks  map[string]*forwarder // by apiserver: "a", "b"
	lb         *forwarder
}

// startEtcdLinks makes one link to etcd per apiserver.
func startEtcdLinks(etcdEndpoint string) (map[string]*forwarder, error) {
	host := etcdEndpoint[len("http://"):]
	links := map[string]*forwarder{}
	for _, name := range []string{"a", "b"} {
		link, err := startForwarder("etcd link "+name, map[string]string{"etcd": host}, "etcd")
		if err != nil {
			return nil, err
		}
		links[name] = link
	}
	return links, nil
}

func (h *haParts) link(apiserver string) (*forwarder, error) {
	link, ok := h.etcdLinks[apiserver]
	if !ok {
		return nil, fmt.Errorf("no apiserver %q: the HA plane has a and b", apiserver)
	}
	return link, nil
}

func (h *haParts) stats() map[string]any {
	links := map[string]any{}
	for name, link := range h.etcdLinks {
		links[name] = link.stats()
	}
	return map[string]any{"lb": h.lb.stats(), "etcd_links": links}
}

func (h *haParts) close() {
	if h.lb != nil {
		h.lb.close()
	}
	for _, link := range h.etcdLinks {
		link.close()
	}
}
