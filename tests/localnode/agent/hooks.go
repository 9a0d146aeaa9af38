// hooks.go: containers' preStop exec hooks, run as a kubelet runs them when a pod is deleted:
// before SIGTERM, inside the container's namespaces, within the pod's grace period.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// containerPIDEnv names the container's main process for its hooks. Pods here share the
// node's PID namespace, so a hook cannot find "its" process the way one in a container does
// (Spark's decom.sh: the only java process); the agent tells it.
const containerPIDEnv = "LOCALNODE_CONTAINER_PID"

// runPreStopHooks runs the preStop exec hook of every running container that has one, all at
// once, and returns when they have all ended or the deadline has passed (their processes are
// then killed). A failed hook is logged, in the container's log too, and does not stop the
// termination, as with a kubelet.
func (p *provider) runPreStopHooks(ps *podState, deadline time.Time) {
	type hook struct {
		container string
		pid       int
		argv      []string
	}
	var hooks []hook
	ps.mu.Lock()
	for _, c := range ps.pod.Spec.Containers {
		proc := ps.procs[c.Name]
		if proc == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
			continue
		}
		hooks = append(hooks, hook{c.Name, proc.Pid, c.Lifecycle.PreStop.Exec.Command})
	}
	ps.mu.Unlock()

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			err := p.runHook(ctx, ps, h.container, h.pid, h.argv)
			if err != nil {
				log.Printf("pod %s: container %s: preStop hook %v failed after %s: %v", ps.key, h.container, h.argv, time.Since(began).Round(time.Millisecond), err)
				return
			}
			log.Printf("pod %s: container %s: preStop hook done in %s", ps.key, h.container, time.Since(began).Round(time.Millisecond))
		}()
	}
	wg.Wait()
}

// runHook runs argv in the network, mount and UTS namespaces of the process pid (the
// container's), with the container's environment, its output appended to the container's log.
func (p *provider) runHook(ctx context.Context, ps *podState, container string, pid int, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	var spec initSpec
	raw, err := os.ReadFile(filepath.Join(ps.dir, "containers", container+".json"))
	if err != nil {
		return fmt.Errorf("the container's spec: %w", err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("the container's spec: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(ps.dir, "logs", container+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append([]string{"--target", strconv.Itoa(pid), "--net", "--mount", "--uts", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = append(append([]string{}, spec.Env...), containerPIDEnv+"="+strconv.Itoa(pid))
	cmd.Dir = "/"
	if spec.WorkingDir != "" {
		cmd.Dir = spec.WorkingDir
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	return cmd.Run()
}
