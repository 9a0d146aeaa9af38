package main

// The sealed cluster's inside: what `run --node` adds to the plane once it is
// in the node namespace. The node's network (a bridge whose address is the
// node IP), then the parts a real cluster has and the loopback plane does not:
// kube-scheduler, the node agent (pods as processes, tests/localnode/agent),
// kube-proxy in nftables mode, and CoreDNS at the cluster DNS address.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"spark-k8s-native/localplane/internal/process"
)

type nodeComponents struct {
	scheduler, agent, kubeProxy, coreDNS *process.Child
	agentControlURL                      string
	runPrefix, netns, netnsInode         string
	supervisorPID                        string
}

// setUpNodeNetwork gives the (empty) node namespace its loopback, the pods'
// bridge with the node IP, and a route for ClusterIPs: without it, node-side
// connections to a ClusterIP fail with "Network unreachable" before nftables
// sees them. A veth pair as a port keeps the bridge's carrier up before the
// first pod (this kernel has no dummy interfaces).
func setUpNodeNetwork() error {
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", nodeBridge},
		{"link", "add", nodeBridge + "keep", "type", "veth", "peer", "name", nodeBridge + "keep1"},
		{"link", "set", nodeBridge + "keep", "master", nodeBridge},
		{"link", "set", nodeBridge + "keep", "up"},
		{"link", "set", nodeBridge + "keep1", "up"},
		{"link", "set", nodeBridge, "up"},
		{"route", "add", serviceCIDR, "dev", nodeBridge},
	}
	for _, step := range steps {
		if err := ipCommand(step...); err != nil {
			return err
		}
	}
	// /proc/sys/net is this namespace's own. With the default ICMP rate limit
	// (1 s), the first connections to a Service without endpoints got no reject
	// for seconds; bridge netfilter must stay on for pod -> ClusterIP -> pod.
	sysctls := map[string]string{
		"net/ipv4/icmp_ratelimit":             "0",
		"net/ipv4/ip_forward":                 "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
	}
	for key, value := range sysctls {
		path := "/proc/sys/" + key
		if _, err := os.Stat(path); err != nil && strings.HasPrefix(key, "net/bridge/") {
			continue // br_netfilter not loaded: its default is on
		}
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", key, value, err)
		}
	}
	return nil
}

func nodeFromEnv() *nodeComponents {
	return &nodeComponents{
		runPrefix:     os.Getenv("LOCALPLANE_RUN_PREFIX"),
		netns:         os.Getenv("LOCALPLANE_NODE_NETNS"),
		netnsInode:    os.Getenv("LOCALPLANE_NETNS_INODE"),
		supervisorPID: os.Getenv("LOCALPLANE_SUPERVISOR_PID"),
	}
}

// startNodeComponents runs the node's parts, each as a child of the plane,
// and returns once the node is Ready and untainted, kube-proxy has synced its
// rules and CoreDNS answers.
func (pl *plane) startNodeComponents(componentsToken string) error {
	n := pl.node
	kubeconfig := pl.path("node-components.kubeconfig")
	writeKubeconfig(kubeconfig, pl.apiURL, pl.path("ca.crt"), map[string]string{"node": componentsToken}, "node", "")
	bin := func(name string) string { return filepath.Join(pl.opts.binDir, name) }

	n.scheduler = &process.Child{Name: "kube-scheduler", Path: bin("kube-scheduler"), LogPath: pl.path("kube-scheduler.log"),
		Args: []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0", "-v=1"}}
	if err := n.scheduler.Start(); err != nil {
		return err
	}

	agentControl := freePort()
	n.agentControlURL = fmt.Sprintf("http://127.0.0.1:%d", agentControl)
	n.agent = &process.Child{Name: "node-agent", Path: bin("node-agent"), LogPath: pl.path("node-agent.log"),
		Args: []string{"run", "--kubeconfig", kubeconfig, "--node-name", nodeName, "--node-ip", nodeIP,
			"--bridge", nodeBridge, "--pod-cidr", podCIDR, "--run-prefix", n.runPrefix,
			"--state-dir", pl.path("node"), "--images", pl.opts.images,
			"--cluster-dns", clusterDNSIP, "--cluster-domain", clusterDomain,
			"--kubelet-listen", nodeIP + ":10250", "--control-listen", fmt.Sprintf("127.0.0.1:%d", agentControl)}}
	if err := n.agent.Start(); err != nil {
		return err
	}
	if err := pl.waitUntil("node "+nodeName+" Ready and untainted", 90*time.Second, n.agent, pl.nodeReady); err != nil {
		return err
	}
	progress("node %s ready (node-agent, pods as processes)", nodeName)

	healthz := freePort()
	n.kubeProxy = &process.Child{Name: "kube-proxy", Path: bin("kube-proxy"), LogPath: pl.path("kube-proxy.log"),
		Args: []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + nodeName, "--proxy-mode=nftables",
			"--cluster-cidr=" + podCIDR, "--conntrack-max-per-core=0",
			"--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
			fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", healthz),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", freePort()), "-v=1"}}
	if err := n.kubeProxy.Start(); err != nil {
		return err
	}
	if err := pl.waitUntil("kube-proxy to sync its rules", 60*time.Second, n.kubeProxy,
		httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))); err != nil {
		return err
	}
	progress("kube-proxy synced (nftables)")

	health, ready := freePort(), freePort()
	must(os.WriteFile(pl.path("Corefile"), []byte(corefile(kubeconfig, health, ready)), 0o644))
	n.coreDNS = &process.Child{Name: "coredns", Path: bin("coredns"), LogPath: pl.path("coredns.log"),
		Args: []string{"-conf", pl.path("Corefile")}}
	if err := n.coreDNS.Start(); err != nil {
		return err
	}
	if err := pl.waitUntil("CoreDNS to be ready", 60*time.Second, n.coreDNS,
		httpOK(fmt.Sprintf("http://127.0.0.1:%d/ready", ready))); err != nil {
		return err
	}
	progress("CoreDNS ready at %s (%s)", clusterDNSIP, clusterDomain)
	return nil
}

// corefile serves the cluster's zones from the apiserver, and nothing else:
// with no forward plugin and only these zones, an outside name is refused at
// once instead of leaving the machine.
func corefile(kubeconfig string, health, ready int) string {
	return fmt.Sprintf(`%[1]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[2]s
    errors
    health 127.0.0.1:%[3]d
    ready 127.0.0.1:%[4]d
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[5]s node
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loop
    reload
    loadbalance
}
`, clusterDomain, nodeIP, health, ready, kubeconfig)
}

// nodeReady: the node reports Ready and the nodelifecycle controller has
// removed the not-ready taint that admission puts on a new node.
func (pl *plane) nodeReady() bool {
	status, body, err := pl.request("GET", "/api/v1/nodes/"+nodeName, nil)
	if err != nil || status != 200 {
		return false
	}
	var node struct {
		Spec struct {
			Taints []struct{ Key string } `json:"taints"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if json.Unmarshal(body, &node) != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

var plainHTTP = &http.Client{Timeout: 2 * time.Second}

func httpOK(url string) func() bool {
	return func() bool {
		resp, err := plainHTTP.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
}

// waitUntil polls cond, failing early if the component it waits on exits.
func (pl *plane) waitUntil(what string, timeout time.Duration, component *process.Child, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		if !component.Running() {
			return fmt.Errorf("%s exited while waiting for %s; see %s", component.Name, what, component.LogPath)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no %s after %s; see %s", what, timeout, component.LogPath)
}

// bootstrapClusterDNS makes the kube-dns Service at the cluster DNS address,
// with no selector and an EndpointSlice that points at CoreDNS on the node IP
// (CoreDNS runs as a process of the node, not as a pod).
func (pl *plane) bootstrapClusterDNS() error {
	ports := []any{
		map[string]any{"name": "dns", "port": 53, "protocol": "UDP"},
		map[string]any{"name": "dns-tcp", "port": 53, "protocol": "TCP"},
	}
	svc := obj("v1", "Service", "kube-dns", "kube-system")
	svc["spec"] = map[string]any{"clusterIP": clusterDNSIP, "ports": ports}
	if err := pl.create("/api/v1/namespaces/kube-system/services", svc); err != nil {
		return err
	}
	slice := obj("discovery.k8s.io/v1", "EndpointSlice", "kube-dns-node", "kube-system")
	slice["metadata"].(map[string]any)["labels"] = map[string]string{
		"kubernetes.io/service-name":             "kube-dns",
		"endpointslice.kubernetes.io/managed-by": "localplane",
	}
	slice["addressType"] = "IPv4"
	slice["endpoints"] = []any{map[string]any{"addresses": []string{nodeIP}, "conditions": map[string]bool{"ready": true}}}
	slice["ports"] = ports
	return pl.create("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices", slice)
}

func (n *nodeComponents) stop() {
	// The agent first: it ends the pods' processes and removes their namespaces.
	for _, c := range []*process.Child{n.agent, n.kubeProxy, n.coreDNS, n.scheduler} {
		if c != nil {
			c.Stop(15 * time.Second)
		}
	}
}

func (n *nodeComponents) env() [][2]string {
	return [][2]string{
		{"LOCALPLANE_NODE_NAME", nodeName},
		{"LOCALPLANE_NODE_IP", nodeIP},
		{"LOCALPLANE_NODE_NETNS", n.netns},
		{"LOCALPLANE_NETNS_INODE", n.netnsInode},
		{"LOCALPLANE_RUN_PREFIX", n.runPrefix},
		{"LOCALPLANE_NODE_CONTROL", n.agentControlURL},
		{"LOCALPLANE_CLUSTER_DNS", clusterDNSIP},
		{"LOCALPLANE_CLUSTER_DOMAIN", clusterDomain},
		{"LOCALPLANE_POD_CIDR", podCIDR},
	}
}
