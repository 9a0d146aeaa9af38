package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spark-k8s-native/localplane/internal/certs"
)

// proxyInFrontOfAFakeApiserver starts the fault proxy before a TLS server with
// the plane's own certificates that answers /hello, and streams "tick" lines on
// /stream as a watch does; it returns the proxy and a client of it.
func proxyInFrontOfAFakeApiserver(t *testing.T) (*Fault, string, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	if err := certs.Write(dir, "spark-driver", certs.Apiserver{IPs: []net.IP{net.ParseIP("127.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := io.WriteString(w, "tick\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	upstream := httptest.NewUnstartedServer(mux)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"))
	if err != nil {
		t.Fatal(err)
	}
	upstream.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	upstream.StartTLS()
	t.Cleanup(upstream.Close)

	p, url, err := Start(upstream.URL, filepath.Join(dir, "ca.crt"),
		filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	t.Cleanup(client.CloseIdleConnections)
	return p, url, client
}

// streamThroughTheProxy opens the fake apiserver's endless stream (a line every 50 ms)
// through the proxy; the stream is closed when the test ends.
func streamThroughTheProxy(t *testing.T) (*Fault, io.Reader) {
	t.Helper()
	p, url, client := proxyInFrontOfAFakeApiserver(t)
	resp, err := client.Get(url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return p, resp.Body
}

// getAsync GETs url in the background; the channel yields the body, or "error: ...".
func getAsync(client *http.Client, url string) <-chan string {
	done := make(chan string, 1)
	go func() {
		resp, err := client.Get(url)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		done <- string(body)
	}()
	return done
}

func TestABlackHoleHoldsRequestsUntilTrafficIsNormalAgain(t *testing.T) {
	p, url, client := proxyInFrontOfAFakeApiserver(t)
	p.Blackhole(0)
	answer := getAsync(client, url+"/hello")
	select {
	case body := <-answer:
		t.Fatalf("a request through a black hole was answered: %q", body)
	case <-time.After(300 * time.Millisecond):
	}
	p.Normal()
	select {
	case body := <-answer:
		if body != "hello" {
			t.Fatalf("after the black hole: %q, want hello", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a held request was not answered after normal()")
	}
}

func TestAWatchStreamGoesSilentInABlackHoleAndResumesAfterIt(t *testing.T) {
	p, stream := streamThroughTheProxy(t)
	lines := make(chan string, 1000)
	go func() {
		r := bufio.NewReader(stream)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	expectLine := func(within time.Duration) {
		t.Helper()
		select {
		case <-lines:
		case <-time.After(within):
			t.Fatalf("no line of the stream within %v", within)
		}
	}
	expectLine(5 * time.Second)
	p.Blackhole(0)
	// What was already on its way may arrive; then nothing.
	time.Sleep(150 * time.Millisecond)
	for len(lines) > 0 {
		<-lines
	}
	select {
	case line := <-lines:
		t.Fatalf("the stream went on in a black hole: %q", line)
	case <-time.After(400 * time.Millisecond):
	}
	p.Normal()
	expectLine(5 * time.Second)
}

func TestThrottlingAnswersTooManyRequestsWithRetryAfterUntilNormal(t *testing.T) {
	p, url, client := proxyInFrontOfAFakeApiserver(t)
	p.Throttle(time.Minute)
	resp, err := client.Get(url + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(body), `"reason":"TooManyRequests"`) {
		t.Fatalf("throttled: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	p.Normal()
	if body := <-getAsync(client, url+"/hello"); body != "hello" {
		t.Fatalf("after normal(): %q", body)
	}
	if n := p.Stats()["throttled"]; n != int64(1) {
		t.Fatalf("throttled requests counted: %v, want 1", n)
	}
}

func TestACutEndsEveryOpenStream(t *testing.T) {
	p, stream := streamThroughTheProxy(t)
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stream)
		close(ended)
	}()
	if n := p.Cut(); n < 1 {
		t.Fatalf("cut closed %d connections, want at least the stream's", n)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a stream outlived the cut")
	}
}
