package process

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAChildRunsLogsAndStopsAndAStartWhileRunningIsRefused(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	c := &Child{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "echo started; exec sleep 30"}, LogPath: log}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if !c.Running() {
		t.Fatal("not running after Start")
	}
	if err := c.Start(); err == nil || !strings.Contains(err.Error(), "sleeper is already running") {
		t.Fatalf("a second Start: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, _ := os.ReadFile(log); strings.Contains(string(out), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing in the child's log after 5s")
		}
	}
	began := time.Now()
	c.Stop(5 * time.Second)
	if c.Running() || time.Since(began) > 4*time.Second {
		t.Fatalf("running %v after Stop, which took %s (SIGTERM ends sleep at once)", c.Running(), time.Since(began))
	}
	// Restartable with the same arguments.
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	c.Stop(5 * time.Second)
}

func TestAMissingBinaryIsNamedInTheError(t *testing.T) {
	c := &Child{Name: "kube-apiserver", Path: "/nonexistent/kube-apiserver", LogPath: filepath.Join(t.TempDir(), "log")}
	err := c.Start()
	if err == nil || !strings.Contains(err.Error(), "start kube-apiserver (/nonexistent/kube-apiserver)") {
		t.Fatalf("want the name and path in the error, got %v", err)
	}
}

func TestAFreePortCanBeListenedOn(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d: %v", port, err)
	}
	ln.Close()
}
