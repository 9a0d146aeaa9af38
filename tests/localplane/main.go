// Command localplane runs a real Kubernetes control plane on loopback for the
// tests and the demo: embedded etcd, kube-apiserver (RBAC, static tokens, audit
// log), kube-controller-manager (garbage collector, namespace and
// service-account controllers), a fault-injecting proxy and a control endpoint.
// With --node, the sealed cluster: the same plane plus kube-scheduler, a node
// whose pods are processes, kube-proxy and CoreDNS, all inside one network
// namespace with no route out of the machine (sealed.go, node.go). With --ha, a
// second kube-apiserver on the same etcd behind a load balancer (ha.go).
//
//	localplane run   --dir DIR [--bin BINDIR] [--watch-cache=true] [--min-request-timeout=1800] [--apiserver-arg=FLAG]...
//	                 [--exit-with-parent] [--remove-dir-on-exit] [--node --images FILE] [--ha]
//	localplane start --dir DIR [same flags]   # run in the background; returns once ready
//	localplane stop  --dir DIR                # stop it and remove DIR
//	localplane ctl   --dir DIR METHOD PATH    # call the control endpoint, e.g. POST /etcd/compact
//	localplane exec  --dir DIR -- CMD...      # run CMD inside the sealed cluster's node namespace
//	localplane leftovers --prefix P --dir DIR --netns-inode N   # after stop: exit 1 if anything of run P is left
//
// When ready, DIR/plane.env lists every address and file (LOCALPLANE_*).
//
// This package assembles the plane (plane.go), its control endpoint
// (control.go), the HA plane (ha.go) and the sealed cluster (sealed.go,
// node.go) from parts that are packages of their own, each with its tests:
// internal/certs (the CA, certificates and tokens), internal/etcd (embedded
// etcd, compaction), internal/proxy (the fault proxy), internal/forwarder (the
// HA plane's TCP load balancer and etcd links) and internal/process (the
// control-plane binaries as child processes).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", "", "plane directory (required)")
	self, _ := os.Executable()
	binDir := fs.String("bin", filepath.Dir(self), "directory holding kube-apiserver and kube-controller-manager")
	watchCache := fs.Bool("watch-cache", true, "enable the apiserver's watch cache")
	minRequestTimeout := fs.Int("min-request-timeout", 1800, "apiserver --min-request-timeout (seconds)")
	exitWithParent := fs.Bool("exit-with-parent", false, "stop when the parent process exits")
	removeDir := fs.Bool("remove-dir-on-exit", false, "remove DIR when the plane stops")
	var apiserverArgs stringList
	fs.Var(&apiserverArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --feature-gates=WatchList=false (repeatable)")
	timeout := fs.Duration("timeout", 180*time.Second, "start: how long to wait for readiness")
	node := fs.Bool("node", false, "the sealed cluster: a node whose pods are processes, in a network namespace of its own")
	images := fs.String("images", "", "with --node: the node agent's image table (JSON, see tests/localnode/agent)")
	ha := fs.Bool("ha", false, "a second kube-apiserver on the same etcd, each on a link to etcd that can be cut, behind a load balancer")
	prefix := fs.String("prefix", "", "leftovers: the run prefix (LOCALPLANE_RUN_PREFIX)")
	netnsInode := fs.Uint64("netns-inode", 0, "leftovers: the node namespace's inode (LOCALPLANE_NETNS_INODE)")
	_ = fs.Parse(args)
	if *dir == "" {
		usage()
	}
	abs, err := filepath.Abs(*dir)
	must(err)
	opts := planeOptions{dir: abs, binDir: *binDir, watchCache: *watchCache, minRequestTimeout: *minRequestTimeout,
		extraAPIServerArgs: apiserverArgs, node: *node, images: *images, ha: *ha}
	if *node && *images == "" && (cmd == "run" || cmd == "start") {
		fmt.Fprintln(os.Stderr, "--node needs --images FILE: the image table that maps image names to local commands")
		os.Exit(2)
	}
	switch cmd {
	case "run":
		if *node && os.Getenv(insideNodeEnv) == "" {
			superviseSealed(opts, args, *exitWithParent)
		} else {
			run(opts, *exitWithParent)
		}
		if *removeDir {
			_ = os.RemoveAll(abs)
		}
	case "start":
		start(opts, *timeout, args)
	case "stop":
		stop(abs)
	case "ctl":
		ctl(abs, fs.Args())
	case "exec":
		execInNode(abs, fs.Args())
	case "leftovers":
		checkLeftovers(*prefix, abs, *netnsInode)
	default:
		usage()
	}
}

// stringList collects a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localplane run|start|stop|ctl --dir DIR [flags]  (see the package doc)")
	os.Exit(2)
}

func run(opts planeOptions, exitWithParent bool) {
	parent := os.Getppid()
	pl, err := runPlane(opts)
	if err != nil {
		progress("failed: %v", err)
		if pl != nil {
			pl.shutdown()
		}
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-signals:
			progress("stopping")
			pl.shutdown()
			return
		case <-tick.C:
			if exitWithParent && os.Getppid() != parent {
				progress("parent exited; stopping")
				pl.shutdown()
				return
			}
		}
	}
}

// start runs the plane as a detached background process and waits for plane.env.
func start(opts planeOptions, timeout time.Duration, args []string) {
	must(os.MkdirAll(opts.dir, 0o755))
	envFile := filepath.Join(opts.dir, "plane.env")
	_ = os.Remove(envFile)
	logPath := filepath.Join(opts.dir, "localplane.log")
	log, err := os.Create(logPath)
	must(err)
	self, _ := os.Executable()
	cmd := exec.Command(self, append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must(cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(timeout)
	for {
		if _, err := os.Stat(envFile); err == nil {
			fmt.Println(envFile)
			return
		}
		select {
		case err := <-exited:
			fmt.Fprintf(os.Stderr, "localplane exited before it was ready (%v); its log %s:\n", err, logPath)
			b, _ := os.ReadFile(logPath)
			os.Stderr.Write(b)
			os.Exit(1)
		case <-deadline:
			fmt.Fprintf(os.Stderr, "localplane not ready after %s; see %s\n", timeout, logPath)
			_ = cmd.Process.Kill()
			os.Exit(1)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func readEnv(dir string) map[string]string {
	f, err := os.Open(filepath.Join(dir, "plane.env"))
	if err != nil {
		return nil
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

func stop(dir string) {
	if env := readEnv(dir); env != nil {
		if pid, err := strconv.Atoi(env["LOCALPLANE_PID"]); err == nil {
			if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.SIGTERM) == nil {
				// A sealed cluster's supervisor first waits for its pods and components to end.
				for i := 0; i < 900 && processAlive(pid); i++ {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}
	must(os.RemoveAll(dir))
}

func ctl(dir string, args []string) {
	env := readEnv(dir)
	if env == nil || len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: localplane ctl --dir DIR METHOD PATH (the plane must be running)")
		os.Exit(2)
	}
	req, err := http.NewRequest(args[0], env["LOCALPLANE_CONTROL"]+args[1], nil)
	must(err)
	resp, err := http.DefaultClient.Do(req)
	must(err)
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	if resp.StatusCode != 200 {
		os.Exit(1)
	}
}

// execInNode runs a command inside the sealed cluster's node namespace, with
// `ip netns exec` so that /etc/netns/<node> (the cluster's DNS) applies.
func execInNode(dir string, args []string) {
	env := readEnv(dir)
	if env == nil || env["LOCALPLANE_NODE_NETNS"] == "" || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: localplane exec --dir DIR -- CMD... (a sealed cluster, --node, must be running in DIR)")
		os.Exit(2)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", env["LOCALPLANE_NODE_NETNS"]}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
