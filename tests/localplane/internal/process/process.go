// Package process runs the plane's binaries as children of the launcher.
package process

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is a control-plane binary run by this process: restartable with
// the same arguments, and killed if this process dies.
type Child struct {
	Name    string
	Path    string
	Args    []string
	LogPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs the binary, its output appended to LogPath.
func (c *Child) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return fmt.Errorf("%s is already running", c.Name)
	}
	log, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open its log: %w", c.Name, err)
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The plane never outlives this process, even if it is killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s (%s): %w", c.Name, c.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	c.cmd, c.done = cmd, done
	return nil
}

// Stop sends SIGTERM, and SIGKILL after grace.
func (c *Child) Stop(grace time.Duration) {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Running says whether the binary runs now.
func (c *Child) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now, for a child to listen on.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
