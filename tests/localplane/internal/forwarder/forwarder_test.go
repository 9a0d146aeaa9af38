package forwarder

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// echoBackend accepts connections, greets each with its name and a newline, then
// echoes what it reads: a stand-in for an apiserver behind the load balancer.
func echoBackend(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, name+"\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// dialLine connects through the forwarder and returns the connection and the
// backend's greeting.
func dialLine(t *testing.T, f *Forwarder) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	greeting, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no greeting through %s: %v", f.name, err)
	}
	return c, r, strings.TrimSpace(greeting)
}

func startTestForwarder(t *testing.T) *Forwarder {
	t.Helper()
	f, err := Start("lb", map[string]string{"a": echoBackend(t, "a"), "b": echoBackend(t, "b")}, "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// closedWithin says whether the connection's peer closed it within d.
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := r.ReadByte()
	return errors.Is(err, io.EOF)
}

func TestARouteSendsNewConnectionsToTheBackendAndClosesTheOldOnesWhenAsked(t *testing.T) {
	f := startTestForwarder(t)
	old, oldReader, first := dialLine(t, f)
	if first != "a" {
		t.Fatalf("first connection reached %q, want a", first)
	}
	if err := f.Route("b", "close"); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(old, oldReader, 2*time.Second) {
		t.Fatal("the connection to a stayed open after a route with existing=close")
	}
	if _, _, next := dialLine(t, f); next != "b" {
		t.Fatalf("a new connection reached %q after the route to b", next)
	}
}

func TestAHeldConnectionStaysOpenAndSilentUntilReleased(t *testing.T) {
	f := startTestForwarder(t)
	held, heldReader, _ := dialLine(t, f)
	if err := f.Route("b", "hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(held, "ping\n"); err != nil {
		t.Fatal(err)
	}
	_ = held.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := heldReader.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a held connection answered %q (%v); want silence", line, err)
	}
	if n := f.Stats()["held"]; n != 1 {
		t.Fatalf("held connections: %v, want 1", n)
	}
	if released := f.ReleaseHeld(); released != 1 {
		t.Fatalf("released %d held connections, want 1", released)
	}
	if !closedWithin(held, heldReader, 2*time.Second) {
		t.Fatal("a released connection stayed open")
	}
}

func TestACutLinkClosesEveryConnectionAndRefusesNewOnesUntilRestored(t *testing.T) {
	f := startTestForwarder(t)
	open, openReader, _ := dialLine(t, f)
	if n := f.Cut(); n != 1 {
		t.Fatalf("cut closed %d connections, want 1", n)
	}
	if !closedWithin(open, openReader, 2*time.Second) {
		t.Fatal("a connection survived the cut")
	}
	refused, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if !closedWithin(refused, bufio.NewReader(refused), 2*time.Second) {
		t.Fatal("a cut link accepted a new connection")
	}
	f.Restore()
	if _, _, backend := dialLine(t, f); backend != "a" {
		t.Fatalf("after restore a new connection reached %q, want a", backend)
	}
}

func TestARouteNamesWhatIsWrongWithIt(t *testing.T) {
	f := startTestForwarder(t)
	if err := f.Route("c", "keep"); err == nil || !strings.Contains(err.Error(), `no backend "c" (have [a b])`) {
		t.Fatalf("a route to an unknown backend: %v", err)
	}
	if err := f.Route("b", "drop"); err == nil || !strings.Contains(err.Error(), `not "drop"`) {
		t.Fatalf("a route with an unknown word for existing connections: %v", err)
	}
}
