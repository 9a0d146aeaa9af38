// cgroup.go: per-pod cgroup v1 directories. Memory limits are enforced by
// /sys/fs/cgroup/memory/PREFIX/<pod-uid> (the kernel OOM-kills over-limit processes there),
// CPU requests are recorded as cpu.shares in /sys/fs/cgroup/cpu/PREFIX/<pod-uid>. The
// memory cgroup's cgroup.procs is also how the agent finds every process of a pod.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupRoot = "/sys/fs/cgroup"

// cgroupControllers are the v1 hierarchies the agent makes PREFIX directories in.
var cgroupControllers = []string{"memory", "cpu"}

type podCgroup struct {
	Memory string // /sys/fs/cgroup/memory/PREFIX/<uid>
	CPU    string // /sys/fs/cgroup/cpu/PREFIX/<uid>
}

func prefixCgroupDir(controller, prefix string) string {
	return filepath.Join(cgroupRoot, controller, prefix)
}

// createPodCgroup makes the pod's cgroups; memLimit <= 0 means no limit.
// The returned undo removes them (after killing anything left inside).
func createPodCgroup(prefix, uid string, memLimit, milliCPU int64) (*podCgroup, func() error, error) {
	cg := &podCgroup{
		Memory: filepath.Join(prefixCgroupDir("memory", prefix), uid),
		CPU:    filepath.Join(prefixCgroupDir("cpu", prefix), uid),
	}
	for _, d := range []string{cg.Memory, cg.CPU} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			_ = cg.remove()
			return nil, nil, fmt.Errorf("mkdir cgroup %s: %w", d, err)
		}
	}
	undo := cg.remove
	if memLimit > 0 {
		if err := cg.setMemoryLimit(memLimit); err != nil {
			_ = undo()
			return nil, nil, err
		}
	}
	shares := milliCPU * 1024 / 1000
	if shares < 2 {
		shares = 2
	}
	if err := writeFile(filepath.Join(cg.CPU, "cpu.shares"), strconv.FormatInt(shares, 10)); err != nil {
		_ = undo()
		return nil, nil, err
	}
	return cg, undo, nil
}

func (cg *podCgroup) setMemoryLimit(limit int64) error {
	// With swap accounting, memsw (mem+swap) must follow, or the process swaps instead of
	// being OOM-killed; memsw >= mem always, so raise memsw first and lower it last.
	memsw := filepath.Join(cg.Memory, "memory.memsw.limit_in_bytes")
	_, err := os.Stat(memsw)
	hasMemsw := err == nil
	if hasMemsw {
		_ = writeFile(memsw, strconv.FormatInt(limit, 10)) // fails when lowering; redone below
	}
	if err := writeFile(filepath.Join(cg.Memory, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10)); err != nil {
		return err
	}
	if hasMemsw {
		return writeFile(memsw, strconv.FormatInt(limit, 10))
	}
	return nil
}

// pids lists the processes in the pod's memory cgroup.
func (cg *podCgroup) pids() []int {
	return cgroupPids(cg.Memory)
}

func cgroupPids(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// oomKills reads the kernel's oom_kill counter of the pod's memory cgroup
// (falls back to memory.failcnt on kernels without the counter).
func (cg *podCgroup) oomKills() int64 {
	f, err := os.Open(filepath.Join(cg.Memory, "memory.oom_control"))
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
	}
	n, _ := readInt(filepath.Join(cg.Memory, "memory.failcnt"))
	return n
}

func (cg *podCgroup) memoryUsage() (int64, error) {
	return readInt(filepath.Join(cg.Memory, "memory.usage_in_bytes"))
}

// remove SIGKILLs whatever is still in the cgroups and removes them.
func (cg *podCgroup) remove() error {
	var errs []error
	for _, d := range []string{cg.Memory, cg.CPU} {
		if err := removeCgroupDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroupDir kills the processes of one cgroup dir, waits for them to leave and rmdirs it.
func removeCgroupDir(dir string) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := cgroupPids(dir)
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		err := syscall.Rmdir(dir)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rmdir cgroup %s (pids %v): %w", dir, pids, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}
