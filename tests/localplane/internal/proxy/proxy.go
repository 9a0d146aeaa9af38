// Package proxy is the plane's fault proxy in front of the apiserver.
package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Fault stands between clients and the apiserver, terminating TLS with
// the apiserver's own certificate, so that tests can cut every connection,
// black-hole traffic (requests hang and open watch streams go silent, as in a
// network partition), add delay, or answer 429 Too Many Requests.
type Fault struct {
	server *http.Server
	proxy  *httputil.ReverseProxy

	mu             sync.Mutex
	conns          map[net.Conn]struct{}
	hole           chan struct{} // non-nil while black-holed; closed on release
	holeTimer      *time.Timer
	throttledUntil time.Time
	delay          time.Duration
	// bandwidth limits the bytes of all responses together, as a slow link
	// does, so that a big list takes seconds; nil: unlimited.
	bandwidth *rate.Limiter

	requests, throttled, cuts, blackholes, responseBytes atomic.Int64
}

// Start serves the proxy to upstream (the apiserver's URL, trusted by caFile)
// on a free port of 127.0.0.1, with the apiserver's certificate; it returns the proxy's URL.
func Start(upstream, caFile, certFile, keyFile string) (*Fault, string, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, "", fmt.Errorf("fault proxy: upstream %q: %w", upstream, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, "", fmt.Errorf("fault proxy: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("fault proxy: the apiserver's certificate %s: %w", certFile, err)
	}
	p := &Fault{conns: map[net.Conn]struct{}{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // watch events pass at once
	rp.Transport = &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
		MaxIdleConns:      100,
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &holdingBody{ReadCloser: resp.Body, proxy: p, ctx: resp.Request.Context()}
		return nil
	}
	rp.ErrorLog = nil
	p.proxy = rp
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("fault proxy: listen: %w", err)
	}
	p.server = &http.Server{
		Handler:   p,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ConnState: p.track,
	}
	go func() { _ = p.server.ServeTLS(ln, "", "") }()
	return p, fmt.Sprintf("https://%s", ln.Addr()), nil
}

func (p *Fault) track(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

func (p *Fault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if hole := p.currentHole(); hole != nil {
		select {
		case <-hole:
		case <-r.Context().Done():
			return
		}
	}
	p.mu.Lock()
	throttled, delay := time.Now().Before(p.throttledUntil), p.delay
	p.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if throttled {
		p.throttled.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
			`"message":"Too many requests, please try again later (localplane fault proxy).",`+
			`"reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`)
		return
	}
	p.proxy.ServeHTTP(w, r)
}

func (p *Fault) currentHole() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hole
}

// Cut closes every client connection at once, as when a load balancer or the
// apiserver's host goes away.
func (p *Fault) Cut() int {
	p.cuts.Add(1)
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return len(conns)
}

// Blackhole holds all traffic for d (0 = until Normal).
func (p *Fault) Blackhole(d time.Duration) {
	p.blackholes.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hole == nil {
		p.hole = make(chan struct{})
	}
	if p.holeTimer != nil {
		p.holeTimer.Stop()
	}
	if d > 0 {
		hole := p.hole
		p.holeTimer = time.AfterFunc(d, func() { p.release(hole) })
	}
}

func (p *Fault) release(hole chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hole == hole && hole != nil {
		close(hole)
		p.hole = nil
	}
}

// Throttle answers every request with 429 for d.
func (p *Fault) Throttle(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttledUntil = time.Now().Add(d)
}

// SetDelay holds every request d before it is passed on.
func (p *Fault) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// LimitBandwidth shares bytesPerSecond among all responses (0: unlimited).
func (p *Fault) LimitBandwidth(bytesPerSecond int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bandwidth = nil
	if bytesPerSecond > 0 {
		p.bandwidth = rate.NewLimiter(rate.Limit(bytesPerSecond), bandwidthChunk)
	}
}

func (p *Fault) currentBandwidth() *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bandwidth
}

// Normal ends every fault (a bandwidth limit is a setting, not a fault: it stays).
func (p *Fault) Normal() {
	p.release(p.currentHole())
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttledUntil, p.delay = time.Time{}, 0
}

// Stats are the proxy's counters and state, for the control endpoint.
func (p *Fault) Stats() map[string]any {
	p.mu.Lock()
	open := len(p.conns)
	holed := p.hole != nil
	bandwidth := 0
	if p.bandwidth != nil {
		bandwidth = int(p.bandwidth.Limit())
	}
	p.mu.Unlock()
	return map[string]any{
		"requests": p.requests.Load(), "throttled": p.throttled.Load(), "cuts": p.cuts.Load(),
		"blackholes": p.blackholes.Load(), "open_connections": open, "blackholed": holed,
		"bandwidth_bytes_per_second": bandwidth, "response_bytes": p.responseBytes.Load(),
	}
}

// holdingBody makes an open response stream (a watch) go silent while the
// proxy is black-holed.
type holdingBody struct {
	io.ReadCloser
	proxy *Fault
	ctx   context.Context
}

// bandwidthChunk is the most a rate-limited read takes at once (the limiter's burst).
const bandwidthChunk = 16 << 10

func (b *holdingBody) Read(buf []byte) (int, error) {
	limiter := b.proxy.currentBandwidth()
	if limiter != nil && len(buf) > bandwidthChunk {
		buf = buf[:bandwidthChunk]
	}
	n, err := b.ReadCloser.Read(buf)
	b.proxy.responseBytes.Add(int64(n))
	if limiter != nil && n > 0 {
		if werr := limiter.WaitN(b.ctx, n); werr != nil {
			return 0, werr
		}
	}
	if hole := b.proxy.currentHole(); hole != nil {
		select {
		case <-hole:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	return n, err
}

// Close stops serving.
func (p *Fault) Close() { _ = p.server.Close() }
