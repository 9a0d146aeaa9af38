// podinit.go: the `node-agent pod-init SPECFILE` subcommand, the first code that runs
// in a container's process. The agent starts it (re-executing itself) with a fresh mount
// and UTS namespace; pod-init joins the pod's cgroups and network namespace, mounts the
// pod's volumes and /etc/hosts + /etc/resolv.conf, and then execs the container command
// in place, so the container's PID is the one the agent waits on and its exit code is real.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initSpec is what the agent writes for pod-init, one file per container start.
type initSpec struct {
	MemoryCgroup string      `json:"memoryCgroup,omitempty"` // cgroup v1 dir to join
	CPUCgroup    string      `json:"cpuCgroup,omitempty"`
	NetNS        string      `json:"netns"`    // /run/netns/PREFIX-pod-N
	Hostname     string      `json:"hostname"` // set in the new UTS namespace
	OverlayDir   string      `json:"overlayDir"`
	Mounts       []mountSpec `json:"mounts"` // done in order; hosts/resolv.conf last
	WorkingDir   string      `json:"workingDir,omitempty"`
	Argv         []string    `json:"argv"`
	Env          []string    `json:"env"`
	ErrFile      string      `json:"errFile"` // pod-init writes why it could not exec here
}

type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// startErrorExitCode is what pod-init exits with when it cannot start the container
// (the agent then reports reason StartError with the text of ErrFile).
const startErrorExitCode = 128

func init() {
	// pod-init's setns(CLONE_NEWNET) applies to the calling thread only: keep main on it.
	if len(os.Args) > 1 && os.Args[1] == "pod-init" {
		runtime.LockOSThread()
	}
}

func podInitMain(specPath string) {
	data, err := os.ReadFile(specPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-init: read spec: %v\n", err)
		os.Exit(startErrorExitCode)
	}
	var spec initSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		fmt.Fprintf(os.Stderr, "pod-init: parse spec %s: %v\n", specPath, err)
		os.Exit(startErrorExitCode)
	}
	err = podInit(&spec)
	// podInit only returns on failure (success ends in exec).
	msg := fmt.Sprintf("pod-init: %v", err)
	fmt.Fprintln(os.Stderr, msg)
	_ = os.WriteFile(spec.ErrFile, []byte(msg), 0o644)
	os.Exit(startErrorExitCode)
}

func podInit(spec *initSpec) error {
	pid := strconv.Itoa(os.Getpid())
	for _, cg := range []string{spec.MemoryCgroup, spec.CPUCgroup} {
		if cg == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", cg, err)
		}
	}

	fd, err := unix.Open(spec.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", spec.NetNS, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns(CLONE_NEWNET) %s: %w", spec.NetNS, err)
	}
	unix.Close(fd)

	if spec.Hostname != "" {
		if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("sethostname %q: %w", spec.Hostname, err)
		}
	}

	if err := doMounts(spec); err != nil {
		return err
	}

	if spec.WorkingDir != "" {
		if err := os.MkdirAll(spec.WorkingDir, 0o755); err != nil {
			return fmt.Errorf("mkdir workingDir %s: %w", spec.WorkingDir, err)
		}
		if err := os.Chdir(spec.WorkingDir); err != nil {
			return fmt.Errorf("chdir %s: %w", spec.WorkingDir, err)
		}
	}

	if len(spec.Argv) == 0 {
		return fmt.Errorf("empty command")
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return err
	}
	err = syscall.Exec(path, spec.Argv, spec.Env)
	return fmt.Errorf("exec %s: %w", path, err)
}

// lookPath resolves argv[0] through the container's PATH, as a runtime does.
func lookPath(name string, env []string) (string, error) {
	pathVar := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	if err := os.Setenv("PATH", pathVar); err != nil {
		return "", fmt.Errorf("setenv PATH: %w", err)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("executable %q not found in PATH %q: %w", name, pathVar, err)
	}
	return p, nil
}

// doMounts bind-mounts every mount source onto its target inside this (private) mount
// namespace. Sources are opened first, because an overlay put on an ancestor directory
// could otherwise shadow a source path that lies below it.
func doMounts(spec *initSpec) error {
	srcFDs := make([]int, len(spec.Mounts))
	for i, m := range spec.Mounts {
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open mount source %s: %w", m.Source, err)
		}
		srcFDs[i] = fd
	}
	ov := &overlays{root: spec.OverlayDir}
	for i, m := range spec.Mounts {
		fi, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", srcFDs[i]))
		if err != nil {
			return fmt.Errorf("stat mount source %s: %w", m.Source, err)
		}
		if err := ov.ensureTarget(m.Target, fi.IsDir()); err != nil {
			return err
		}
		src := fmt.Sprintf("/proc/self/fd/%d", srcFDs[i])
		if err := unix.Mount(src, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mount --bind %s %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("mount -o remount,bind,ro %s: %w", m.Target, err)
			}
		}
		unix.Close(srcFDs[i])
	}
	return nil
}

// overlays makes missing mount targets exist without touching the host: an overlay
// (lower = nearest existing ancestor, upper/work on a tmpfs in the pod's state dir) is
// mounted on that ancestor inside the pod's mount namespace, and the target is created in it.
type overlays struct {
	root    string   // pod state dir's overlay directory
	mounted []string // ancestors that already carry one of our overlays
	tmpfs   bool
}

func (o *overlays) ensureTarget(target string, dir bool) error {
	target = filepath.Clean(target)
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	inOverlay := false
	for _, m := range o.mounted {
		if strings.HasPrefix(target, m+"/") {
			inOverlay = true
		}
	}
	if !inOverlay {
		anc := filepath.Dir(target)
		for {
			if _, err := os.Stat(anc); err == nil {
				break
			}
			anc = filepath.Dir(anc)
		}
		if anc == "/" {
			return fmt.Errorf("mount target %s: no existing ancestor below / to put an overlay on (refusing to overlay /)", target)
		}
		if err := o.mountOverlay(anc); err != nil {
			return err
		}
	}
	if dir {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("mkdir %s in overlay: %w", target, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("mkdir %s in overlay: %w", filepath.Dir(target), err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s in overlay: %w", target, err)
	}
	return f.Close()
}

func (o *overlays) mountOverlay(anc string) error {
	if !o.tmpfs {
		// upper/work on their own tmpfs: overlayfs refuses an upperdir that lies
		// inside its lowerdir on the same filesystem (the state dir may be under anc).
		if err := os.MkdirAll(o.root, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", o.root, err)
		}
		if err := unix.Mount("tmpfs", o.root, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mount -t tmpfs %s: %w", o.root, err)
		}
		o.tmpfs = true
	}
	n := strconv.Itoa(len(o.mounted))
	upper, work := filepath.Join(o.root, n, "upper"), filepath.Join(o.root, n, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", anc, upper, work)
	if err := unix.Mount("overlay", anc, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount -t overlay -o %s overlay %s: %w", opts, anc, err)
	}
	o.mounted = append(o.mounted, anc)
	return nil
}
