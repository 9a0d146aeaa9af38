// main.go: command line and wiring of node-agent, a virtual-kubelet node whose pods are
// local processes. Subcommands:
//
//	node-agent run ...               the node (flags below)
//	node-agent clean --run-prefix P  remove every global resource of prefix P (crashed run)
//	node-agent pod-init SPECFILE     internal: first stage of a container process (podinit.go)
//
// Node registration, lease, node status, the pod informer, status sync and the kubelet
// HTTP API (logs) come from virtual-kubelet's nodeutil; the provider is ours.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vklogrus "github.com/virtual-kubelet/virtual-kubelet/log/logrus"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type agentConfig struct {
	Kubeconfig, NodeName, NodeIP, Bridge, PodCIDR, Prefix, StateDir, Images string
	ClusterDNS, ClusterDomain, KubeletListen, ControlListen                 string
	CPU, Memory                                                             string
	MaxPods                                                                 int
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "pod-init":
		if len(os.Args) != 3 {
			usage()
		}
		podInitMain(os.Args[2])
	case "run":
		cfg := parseRunFlags(os.Args[2:])
		if err := runAgent(cfg); err != nil {
			log.Fatalf("node-agent: %v", err)
		}
	case "clean":
		fs := flag.NewFlagSet("clean", flag.ExitOnError)
		prefix := fs.String("run-prefix", "", "run prefix whose resources to remove")
		_ = fs.Parse(os.Args[2:])
		if err := checkPrefix(*prefix); err != nil {
			log.Fatalf("node-agent clean: %v", err)
		}
		if err := cleanPrefix(*prefix, func(s string) { fmt.Println("removed", s) }); err != nil {
			log.Fatalf("node-agent clean: %v", err)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: node-agent run --kubeconfig PATH --node-name NAME ... | clean --run-prefix PREFIX | pod-init SPECFILE")
	os.Exit(2)
}

func parseRunFlags(args []string) *agentConfig {
	c := &agentConfig{}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	fs.StringVar(&c.NodeName, "node-name", "", "name of the Node object")
	fs.StringVar(&c.NodeIP, "node-ip", "10.244.0.1", "node IP (on the bridge)")
	fs.StringVar(&c.Bridge, "bridge", "cni0", "bridge the pods' veths join")
	fs.StringVar(&c.PodCIDR, "pod-cidr", "10.244.0.0/24", "pod CIDR (IPv4 /24)")
	fs.StringVar(&c.Prefix, "run-prefix", "", "unique prefix of every global resource of this run")
	fs.StringVar(&c.StateDir, "state-dir", "", "directory for per-pod state (volumes, logs)")
	fs.StringVar(&c.Images, "images", "", "image table (JSON)")
	fs.StringVar(&c.ClusterDNS, "cluster-dns", "10.96.0.10", "cluster DNS server")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", "cluster.local", "cluster domain")
	fs.StringVar(&c.KubeletListen, "kubelet-listen", "10.244.0.1:10250", "kubelet API (TLS) address")
	fs.StringVar(&c.ControlListen, "control-listen", "127.0.0.1:10255", "test control endpoint (plain HTTP)")
	fs.StringVar(&c.CPU, "cpu-capacity", "16", "cpu capacity reported (over-committed on purpose)")
	fs.StringVar(&c.Memory, "memory-capacity", "20Gi", "memory capacity reported")
	fs.IntVar(&c.MaxPods, "max-pods", 110, "pods capacity reported")
	_ = fs.Parse(args)
	var missing []string
	for name, v := range map[string]string{"kubeconfig": c.Kubeconfig, "node-name": c.NodeName, "state-dir": c.StateDir} {
		if v == "" {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		log.Fatalf("node-agent run: missing %s", strings.Join(missing, ", "))
	}
	if err := checkPrefix(c.Prefix); err != nil {
		log.Fatalf("node-agent run: %v", err)
	}
	return c
}

// checkPrefix refuses prefixes that could match resources that are not ours.
func checkPrefix(p string) error {
	if !regexp.MustCompile(`^[a-z][a-z0-9]{3,19}$`).MatchString(p) {
		return fmt.Errorf("--run-prefix %q must be 4-20 lowercase letters/digits starting with a letter", p)
	}
	return nil
}

func runAgent(cfg *agentConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Leftovers of a crashed run with this very prefix.
	if err := cleanPrefix(cfg.Prefix, func(s string) { log.Printf("startup clean: removed %s", s) }); err != nil {
		return err
	}
	cfg.StateDir = filepath.Join(cfg.StateDir, cfg.Prefix)
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("mkdir --state-dir %s: %w", cfg.StateDir, err)
	}
	for _, c := range cgroupControllers {
		d := prefixCgroupDir(c, cfg.Prefix)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("mkdir cgroup %s: %w", d, err)
		}
	}
	netw, err := newNetwork(cfg.Prefix, cfg.Bridge, cfg.NodeIP, cfg.PodCIDR)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	if _, err := loadImages(cfg.Images); err != nil {
		return err
	}

	logger := logrus.StandardLogger()
	logger.SetLevel(logrus.InfoLevel)
	vklog.L = vklogrus.FromLogrus(logrus.NewEntry(logger))

	cert, err := selfSignedCert(cfg.NodeName, cfg.NodeIP)
	if err != nil {
		return err
	}
	_ = os.Setenv("KUBECONFIG", cfg.Kubeconfig) // nodeutil.NewNode also builds a default client from it
	client, err := nodeutil.ClientsetFromEnv(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("client from --kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	nodeSpec, err := nodeObject(cfg)
	if err != nil {
		return err
	}
	var prov *provider
	mux := http.NewServeMux()
	n, err := nodeutil.NewNode(cfg.NodeName,
		func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
			prov = &provider{
				cfg: cfg, client: client, podLister: pc.Pods, services: pc.Services,
				allocatable: nodeSpec.Status.Allocatable, net: netw, self: self,
				pods: map[string]*podState{},
			}
			return prov, nil, nil // nil NodeProvider: nodeutil's naive one marks the node Ready
		},
		nodeutil.WithClient(client),
		nodeutil.AttachProviderRoutes(mux),
		nodeutil.WithTLSConfig(func(c *tls.Config) error {
			c.Certificates = []tls.Certificate{cert}
			return nil
		}),
		func(c *nodeutil.NodeConfig) error {
			c.NodeSpec = *nodeSpec
			c.HTTPListenAddr = cfg.KubeletListen
			c.SkipDownwardAPIResolution = true                    // env.go resolves status.podIP & co.
			c.Handler = nodeutil.WithAuth(nodeutil.NoAuth(), mux) // the apiserver does not authenticate to us either
			c.NumWorkers = 4
			return nil
		},
	)
	if err != nil {
		return fmt.Errorf("create node: %w", err)
	}

	stopControl, err := serveControl(cfg.ControlListen, prov.controlHandler())
	if err != nil {
		return err
	}
	defer stopControl()

	nodeDone := make(chan error, 1)
	go func() { nodeDone <- n.Run(ctx) }()
	go func() {
		if err := n.WaitReady(ctx, 0); err == nil {
			log.Printf("node %s ready (kubelet API %s, control %s)", cfg.NodeName, cfg.KubeletListen, cfg.ControlListen)
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
		log.Printf("signal received, shutting down")
	case runErr = <-nodeDone:
		log.Printf("node controller stopped: %v", runErr)
	}
	stop()
	select {
	case <-nodeDone:
	case <-time.After(3 * time.Second):
		log.Printf("node controller still stopping; going on with cleanup")
	}
	prov.shutdown()
	if err := netw.drop.shutdown(); err != nil {
		log.Printf("%v", err)
	}
	if err := cleanPrefix(cfg.Prefix, func(s string) { log.Printf("shutdown clean: removed %s", s) }); err != nil {
		log.Printf("%v", err)
	}
	if err := os.RemoveAll(cfg.StateDir); err != nil {
		log.Printf("rm -rf %s: %v", cfg.StateDir, err)
	}
	log.Printf("stopped")
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	return nil
}

// nodeObject is the Node registered by nodeutil.
func nodeObject(cfg *agentConfig) (*v1.Node, error) {
	cpu, err := resource.ParseQuantity(cfg.CPU)
	if err != nil {
		return nil, fmt.Errorf("--cpu-capacity %q: %w", cfg.CPU, err)
	}
	mem, err := resource.ParseQuantity(cfg.Memory)
	if err != nil {
		return nil, fmt.Errorf("--memory-capacity %q: %w", cfg.Memory, err)
	}
	_, portStr, err := net.SplitHostPort(cfg.KubeletListen)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-listen %q: %w", cfg.KubeletListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-listen port %q: %w", portStr, err)
	}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	kernel := utsString(uts.Release[:])
	resources := v1.ResourceList{
		v1.ResourceCPU:              cpu,
		v1.ResourceMemory:           mem,
		v1.ResourcePods:             *resource.NewQuantity(int64(cfg.MaxPods), resource.DecimalSI),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	now := metav1.Now()
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: cfg.NodeName,
			Labels: map[string]string{
				"type":                   "process-node",
				"kubernetes.io/hostname": cfg.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: v1.NodeSpec{PodCIDR: cfg.PodCIDR, PodCIDRs: []string{cfg.PodCIDR}},
		Status: v1.NodeStatus{
			Phase:       v1.NodePending,
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: cfg.NodeIP},
				{Type: v1.NodeHostName, Address: cfg.NodeName},
			},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(port)}},
			NodeInfo: v1.NodeSystemInfo{
				OperatingSystem: "linux", Architecture: "amd64", KernelVersion: kernel,
				OSImage: "process-node", KubeletVersion: "v1.36.3-node-agent",
				ContainerRuntimeVersion: "process://node-agent",
			},
			Conditions: []v1.NodeCondition{
				cond(v1.NodeReady, v1.ConditionFalse, "KubeletNotReady", "starting"),
				cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", ""),
				cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
				cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", ""),
				cond(v1.NodeNetworkUnavailable, v1.ConditionFalse, "RouteCreated", ""),
			},
		},
	}, nil
}

func utsString(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}

// selfSignedCert makes the kubelet API's serving certificate (the apiserver does not
// verify kubelet certificates by default).
func selfSignedCert(nodeName, nodeIP string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generate kubelet key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: nodeName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{nodeName},
	}
	if ip := net.ParseIP(nodeIP); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-sign kubelet cert: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// cleanPrefix removes every global resource named with prefix: processes and cgroups
// /sys/fs/cgroup/{memory,cpu}/PREFIX, the pods' network namespaces
// /run/netns/PREFIX-pod-*, and the nft table inet PREFIX_agent (in the current
// network namespace). Not PREFIX-node: the node's namespace is the launcher's.
func cleanPrefix(prefix string, report func(string)) error {
	var errs []string
	for _, c := range cgroupControllers {
		root := prefixCgroupDir(c, prefix)
		children, _ := os.ReadDir(root)
		for _, ch := range children {
			if !ch.IsDir() {
				continue
			}
			d := filepath.Join(root, ch.Name())
			if err := removeCgroupDir(d); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			report("cgroup " + d)
		}
		if _, err := os.Stat(root); err == nil {
			if err := removeCgroupDir(root); err != nil {
				errs = append(errs, err.Error())
			} else {
				report("cgroup " + root)
			}
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix+"-pod-") {
			continue
		}
		if err := run("ip", "netns", "del", e.Name()); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		report("netns " + e.Name())
	}
	table := prefix + "_agent"
	if _, err := exec.LookPath("nft"); err == nil {
		if exec.Command("nft", "list", "table", "inet", table).Run() == nil {
			if err := run("nft", "delete", "table", "inet", table); err != nil {
				errs = append(errs, err.Error())
			} else {
				report("nft table inet " + table)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clean %s: %s", prefix, strings.Join(errs, "; "))
	}
	return nil
}
