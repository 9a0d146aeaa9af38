package main

// The sealed cluster's outside: the network namespace that holds the whole
// cluster (the "node"), seen from the machine's own namespace. A supervisor
// process stays outside, so that whatever happens inside (even a crash) it
// can remove everything the run made: the node namespace, the pods' namespaces
// and cgroups (through `node-agent clean`), /etc/netns/<node>, and its entry in
// the run registry. Every global name carries the run's prefix, a random id
// recorded in the registry; nothing is ever removed by a broader pattern.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runRegistry lists the sealed runs of this machine, one file per run, so that
// a run that crashed is cleaned up by the next one to start. /run is a tmpfs:
// like the namespaces and cgroups it describes, it does not outlive a reboot.
const runRegistry = "/run/spark-k8s-native/runs"

// sealedRun is one run's entry in the registry.
type sealedRun struct {
	Prefix        string `json:"prefix"`
	SupervisorPID int    `json:"supervisorPid"`
	Dir           string `json:"dir"`
	NodeNetns     string `json:"nodeNetns"`
	NetnsInode    uint64 `json:"netnsInode"`
	BinDir        string `json:"binDir"`
}

func (r sealedRun) registryFile() string { return filepath.Join(runRegistry, r.Prefix+".json") }
func (r sealedRun) netnsPath() string    { return "/run/netns/" + r.NodeNetns }
func (r sealedRun) etcNetns() string     { return "/etc/netns/" + r.NodeNetns }

// Addresses inside the node namespace; the same in every run, since each run
// has a namespace of its own.
const (
	nodeName        = "process-node"
	nodeIP          = "10.244.0.1"
	podCIDR         = "10.244.0.0/24"
	serviceCIDR     = "10.96.0.0/16"
	clusterDNSIP    = "10.96.0.10"
	kubernetesSvcIP = "10.96.0.1"
	clusterDomain   = "cluster.local"
	nodeBridge      = "cni0"
	sealedAPIPort   = 6443
)

// insideNodeEnv marks the inner `run` that the supervisor starts inside the node namespace.
const insideNodeEnv = "LOCALPLANE_INSIDE_NODE"

func newRunPrefix() string {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	must(err)
	return "skn" + hex.EncodeToString(b)
}

// superviseSealed is `run --node` outside the node: it makes the node
// namespace, runs the plane inside it, and removes everything when that ends.
func superviseSealed(opts planeOptions, args []string, exitWithParent bool) {
	parent := os.Getppid()
	if os.Geteuid() != 0 {
		progress("failed: the sealed cluster needs root (network namespaces, cgroups, nftables, mounts)")
		os.Exit(1)
	}
	for _, tool := range []string{"ip", "nsenter", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			progress("failed: %s not found (Debian packages iproute2, util-linux, nftables); scripts/lib.sh ensure_tools installs them", tool)
			os.Exit(1)
		}
	}
	cleanCrashedRuns(opts.binDir)
	run := sealedRun{Prefix: newRunPrefix(), SupervisorPID: os.Getpid(), Dir: opts.dir, BinDir: opts.binDir}
	run.NodeNetns = run.Prefix + "-node"
	if err := createNodeNetns(&run); err != nil {
		progress("failed: %v", err)
		cleanRun(run)
		os.Exit(1)
	}
	progress("node network namespace %s (run %s)", run.NodeNetns, run.Prefix)

	self, _ := os.Executable()
	inner := exec.Command("nsenter", append([]string{"--net=" + run.netnsPath(), "--", self, "run"}, args...)...)
	inner.Env = append(os.Environ(),
		insideNodeEnv+"=1",
		"LOCALPLANE_RUN_PREFIX="+run.Prefix,
		"LOCALPLANE_NODE_NETNS="+run.NodeNetns,
		fmt.Sprintf("LOCALPLANE_NETNS_INODE=%d", run.NetnsInode),
		fmt.Sprintf("LOCALPLANE_SUPERVISOR_PID=%d", run.SupervisorPID))
	inner.Stdout, inner.Stderr = os.Stdout, os.Stderr
	inner.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	if err := inner.Start(); err != nil {
		progress("failed: start the plane inside %s: %v", run.NodeNetns, err)
		cleanRun(run)
		os.Exit(1)
	}
	exited := make(chan error, 1)
	go func() { exited <- inner.Wait() }()
	var status error
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-signals:
		case <-tick.C:
			if !exitWithParent || os.Getppid() == parent {
				continue
			}
			progress("parent exited; stopping")
		case status = <-exited:
			break wait
		}
		_ = inner.Process.Signal(syscall.SIGTERM)
		select {
		case status = <-exited:
		case <-time.After(60 * time.Second):
			progress("the plane inside %s did not stop in 60s; killing it", run.NodeNetns)
			_ = inner.Process.Kill()
			status = <-exited
		}
		break
	}
	cleanRun(run)
	if left := leftovers(run); len(left) > 0 {
		progress("left behind after stop: %s", strings.Join(left, "; "))
		os.Exit(1)
	}
	progress("sealed run %s removed; nothing left behind", run.Prefix)
	if status != nil {
		os.Exit(1)
	}
}

// createNodeNetns makes the empty node namespace (with no route out of the
// machine: it never gets an uplink) and the files `ip netns exec` lays over
// /etc for commands run inside it, and registers the run.
func createNodeNetns(run *sealedRun) error {
	if err := os.MkdirAll(runRegistry, 0o755); err != nil {
		return err
	}
	// Registered first: a crash from here on is cleaned by the next run.
	if err := writeRegistry(*run); err != nil {
		return err
	}
	if err := ipCommand("netns", "add", run.NodeNetns); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(run.netnsPath(), &st); err != nil {
		return fmt.Errorf("stat %s: %w", run.netnsPath(), err)
	}
	run.NetnsInode = st.Ino
	if err := writeRegistry(*run); err != nil {
		return err
	}
	if err := os.MkdirAll(run.etcNetns(), 0o755); err != nil {
		return err
	}
	host, _ := os.Hostname()
	hosts := fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s %s\n", nodeIP, nodeName, host)
	resolv := fmt.Sprintf("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n",
		driverNamespace, clusterDomain, clusterDomain, clusterDomain, clusterDNSIP)
	if err := os.WriteFile(filepath.Join(run.etcNetns(), "hosts"), []byte(hosts), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(run.etcNetns(), "resolv.conf"), []byte(resolv), 0o644)
}

func writeRegistry(run sealedRun) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(run.registryFile(), b, 0o644)
}

// cleanRun removes what a run made outside its plane directory. The node
// namespace's own contents (bridge, veths, nft tables) go with it.
func cleanRun(run sealedRun) {
	agent := filepath.Join(run.BinDir, "node-agent")
	if out, err := exec.Command(agent, "clean", "--run-prefix", run.Prefix).CombinedOutput(); err != nil {
		progress("node-agent clean --run-prefix %s: %v: %s", run.Prefix, err, strings.TrimSpace(string(out)))
	} else if s := strings.TrimSpace(string(out)); s != "" {
		progress("%s", s)
	}
	if _, err := os.Stat(run.netnsPath()); err == nil {
		if err := ipCommand("netns", "delete", run.NodeNetns); err != nil {
			progress("%v", err)
		}
	}
	_ = os.RemoveAll(run.etcNetns())
	_ = os.Remove(run.registryFile())
}

// cleanCrashedRuns cleans every registered run whose supervisor is gone.
func cleanCrashedRuns(binDir string) {
	entries, _ := os.ReadDir(runRegistry)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(runRegistry, e.Name()))
		if err != nil {
			continue
		}
		var run sealedRun
		if json.Unmarshal(b, &run) != nil || run.Prefix == "" || run.Prefix+".json" != e.Name() {
			continue
		}
		if processAlive(run.SupervisorPID) {
			continue // another run, still going: two runs may coexist
		}
		if run.BinDir == "" {
			run.BinDir = binDir
		}
		progress("cleaning up run %s, left by a supervisor (pid %d) that is gone", run.Prefix, run.SupervisorPID)
		cleanRun(run)
	}
}

// processAlive: a zombie (a supervisor killed while nobody reaps it) is not.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, so read after the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// leftovers lists what of a run still exists, looking at: its registry entry,
// /run/netns/<prefix>-*, /etc/netns/<prefix>-*, the cgroups
// /sys/fs/cgroup/{memory,cpu}/<prefix>, mounts naming the prefix or the plane
// directory, and processes in the node namespace (by its inode) or whose
// command line names the plane directory.
func leftovers(run sealedRun) []string {
	var left []string
	if _, err := os.Stat(run.registryFile()); err == nil {
		left = append(left, "registry entry "+run.registryFile())
	}
	for _, pattern := range []string{"/run/netns/" + run.Prefix + "-*", "/etc/netns/" + run.Prefix + "-*"} {
		matches, _ := filepath.Glob(pattern)
		left = append(left, matches...)
	}
	for _, controller := range []string{"memory", "cpu"} {
		cg := filepath.Join("/sys/fs/cgroup", controller, run.Prefix)
		if _, err := os.Stat(cg); err == nil {
			left = append(left, "cgroup "+cg)
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			if strings.Contains(line, run.Prefix) || (run.Dir != "" && strings.Contains(line, run.Dir+"/")) {
				left = append(left, "mount "+line)
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if run.NetnsInode != 0 && syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == run.NetnsInode {
			left = append(left, fmt.Sprintf("process %d in the node namespace", pid))
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if run.Dir != "" && strings.Contains(string(cmdline), run.Dir+"/") {
			left = append(left, fmt.Sprintf("process %d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return left
}

// checkLeftovers is `localplane leftovers`: the check a test runs after stop.
func checkLeftovers(prefix, dir string, inode uint64) {
	run := sealedRun{Prefix: prefix, Dir: dir, NodeNetns: prefix + "-node", NetnsInode: inode}
	fmt.Printf("checked: registry %s, /run/netns/%s-*, /etc/netns/%s-*, /sys/fs/cgroup/{memory,cpu}/%s, mounts naming %s or %s, processes in netns inode %d or naming %s\n",
		run.registryFile(), prefix, prefix, prefix, prefix, dir, inode, dir)
	if left := leftovers(run); len(left) > 0 {
		for _, l := range left {
			fmt.Println("LEFT:", l)
		}
		os.Exit(1)
	}
	fmt.Println("nothing left behind")
}

func ipCommand(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
