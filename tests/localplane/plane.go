package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"spark-k8s-native/localplane/internal/certs"
	"spark-k8s-native/localplane/internal/etcd"
	"spark-k8s-native/localplane/internal/forwarder"
	"spark-k8s-native/localplane/internal/process"
	"spark-k8s-native/localplane/internal/proxy"
)

// Identities the plane creates. The restricted one has only what a Spark
// driver needs in one namespace; pods-only lacks services (for the tests of
// what happens when executor Services are forbidden).
const (
	driverNamespace    = "spark"
	forbiddenNamespace = "forbidden"
	restrictedUser     = "spark-driver"
	podsOnlyUser       = "spark-driver-pods-only"
)

type planeOptions struct {
	dir               string
	binDir            string
	watchCache        bool
	minRequestTimeout int
	// Extra kube-apiserver flags, appended last (so they win).
	extraAPIServerArgs []string
	// node: the sealed cluster (node.go, sealed.go); images: the node agent's image table.
	node   bool
	images string
	// ha: a second apiserver on the same etcd and a load balancer in front of both (ha.go).
	ha bool
}

type plane struct {
	opts       planeOptions
	etcd       *etcd.Embedded
	apiserver  *process.Child
	kcm        *process.Child
	proxy      *proxy.Fault
	apiURL     string
	proxyURL   string
	controlURL string
	adminToken string
	httpClient *http.Client
	node       *nodeComponents // nil on the loopback plane
	ha         *haParts        // nil unless --ha
}

func (pl *plane) path(name string) string { return filepath.Join(pl.opts.dir, name) }

func runPlane(opts planeOptions) (*plane, error) {
	began := time.Now()
	pl := &plane{opts: opts}
	must(os.MkdirAll(opts.dir, 0o755))
	if opts.node {
		pl.node = nodeFromEnv()
		if err := setUpNodeNetwork(); err != nil {
			return pl, err
		}
	}
	if err := certs.Write(opts.dir, restrictedUser, apiserverCertificate); err != nil {
		return pl, err
	}
	tokens := map[string]string{}
	for _, name := range []string{"admin", "restricted", "pods-only", "kube-controller-mgr", "node-components"} {
		token, err := certs.RandomToken()
		if err != nil {
			return pl, err
		}
		tokens[name] = token
	}
	pl.adminToken = tokens["admin"]
	var csv strings.Builder
	fmt.Fprintf(&csv, "%s,admin,uid-admin,\"system:masters\"\n", tokens["admin"])
	fmt.Fprintf(&csv, "%s,%s,uid-restricted\n", tokens["restricted"], restrictedUser)
	fmt.Fprintf(&csv, "%s,%s,uid-pods-only\n", tokens["pods-only"], podsOnlyUser)
	fmt.Fprintf(&csv, "%s,system:kube-controller-manager,uid-kcm,\"system:masters\"\n", tokens["kube-controller-mgr"])
	// The scheduler, node agent, kube-proxy and CoreDNS of the sealed cluster share one identity.
	fmt.Fprintf(&csv, "%s,system:node-components,uid-node-components,\"system:masters\"\n", tokens["node-components"])
	must(os.WriteFile(pl.path("tokens.csv"), []byte(csv.String()), 0o600))
	for name, tok := range tokens {
		must(os.WriteFile(pl.path(name+".token"), []byte(tok), 0o600))
	}
	must(os.WriteFile(pl.path("audit-policy.yaml"), []byte(auditPolicy), 0o644))

	var err error
	if pl.etcd, err = etcd.Start(opts.dir); err != nil {
		return pl, err
	}
	progress("etcd ready at %s", pl.etcd.Endpoint)
	etcdURL := pl.etcd.Endpoint
	if opts.ha {
		pl.ha = &haParts{}
		if pl.ha.etcdLinks, err = startEtcdLinks(pl.etcd.Endpoint); err != nil {
			return pl, err
		}
		etcdURL = "http://" + pl.ha.etcdLinks["a"].Addr()
	}

	port := freePort()
	pl.apiURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	if opts.node {
		port = sealedAPIPort
		pl.apiURL = fmt.Sprintf("https://%s:%d", nodeIP, port)
	}
	pl.apiserver = &process.Child{
		Name: "kube-apiserver", Path: filepath.Join(opts.binDir, "kube-apiserver"),
		Args: pl.apiserverArgs(port, etcdURL, ""), LogPath: pl.path("kube-apiserver.log"),
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(mustRead(pl.path("ca.crt")))
	pl.httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if err := pl.startAPIServer(); err != nil {
		return pl, err
	}
	progress("kube-apiserver ready at %s", pl.apiURL)
	if opts.ha {
		if err := pl.startSecondAPIServer(); err != nil {
			return pl, err
		}
	}
	if err := pl.bootstrap(); err != nil {
		return pl, err
	}
	if opts.node {
		if err := pl.bootstrapClusterDNS(); err != nil {
			return pl, err
		}
	}

	writeKubeconfig(pl.path("kube-controller-manager.kubeconfig"), pl.apiURL, pl.path("ca.crt"),
		map[string]string{"kcm": tokens["kube-controller-mgr"]}, "kcm", "")
	controllers := "garbagecollector,namespace,serviceaccount"
	if opts.node {
		// A node needs its not-ready taint removed (nodelifecycle), Services their
		// EndpointSlices, and projected service-account volumes the root CA ConfigMap.
		controllers += ",endpointslice-controller,node-lifecycle-controller,root-ca-certificate-publisher-controller"
	}
	pl.kcm = &process.Child{
		Name: "kube-controller-manager", Path: filepath.Join(opts.binDir, "kube-controller-manager"),
		Args: []string{
			"--kubeconfig=" + pl.path("kube-controller-manager.kubeconfig"),
			"--controllers=" + controllers, "--root-ca-file=" + pl.path("ca.crt"),
			"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
			"--concurrent-gc-syncs=20", "-v=1",
		},
		LogPath: pl.path("kube-controller-manager.log"),
	}
	if err := pl.kcm.Start(); err != nil {
		return pl, err
	}
	// Pods are admitted only once their namespace's default service account exists.
	if err := pl.waitFor("/api/v1/namespaces/"+driverNamespace+"/serviceaccounts/default", 60*time.Second); err != nil {
		return pl, err
	}

	if opts.node {
		if err := pl.startNodeComponents(tokens["node-components"]); err != nil {
			return pl, err
		}
	}

	if pl.proxy, pl.proxyURL, err = proxy.Start(pl.apiURL, pl.path("ca.crt"), pl.path("apiserver.crt"), pl.path("apiserver.key")); err != nil {
		return pl, err
	}
	if pl.controlURL, err = pl.serveControl(); err != nil {
		return pl, err
	}
	writeKubeconfig(pl.path("kubeconfig"), pl.apiURL, pl.path("ca.crt"),
		map[string]string{"admin": tokens["admin"], "restricted": tokens["restricted"]}, "admin", driverNamespace)
	pl.writeEnv()
	progress("plane ready in %.1fs: %s", time.Since(began).Seconds(), pl.path("plane.env"))
	return pl, nil
}

// apiserverArgs are the flags of an apiserver on etcdURL; suffix names its own
// files (the second apiserver of the HA plane: "-b").
func (pl *plane) apiserverArgs(port int, etcdURL, suffix string) []string {
	bind, advertise := "127.0.0.1", "127.0.0.1"
	if pl.opts.node {
		// Pods reach the apiserver at the node IP (through the kubernetes
		// Service), and the apiserver reaches the node agent there for logs.
		bind, advertise = "0.0.0.0", nodeIP
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + bind, "--advertise-address=" + advertise,
		"--kubelet-preferred-address-types=InternalIP",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + pl.path("apiserver-certs"+suffix),
		"--tls-cert-file=" + pl.path("apiserver.crt"),
		"--tls-private-key-file=" + pl.path("apiserver.key"),
		"--client-ca-file=" + pl.path("ca.crt"),
		"--token-auth-file=" + pl.path("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pl.path("sa.key"),
		"--service-account-signing-key-file=" + pl.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--profiling=false",
		"--audit-policy-file=" + pl.path("audit-policy.yaml"),
		"--audit-log-path=" + pl.path("audit"+suffix+".log"),
		fmt.Sprintf("--min-request-timeout=%d", pl.opts.minRequestTimeout),
		"-v=1",
	}
	if !pl.opts.watchCache {
		args = append(args, "--watch-cache=false")
	}
	return append(args, pl.opts.extraAPIServerArgs...)
}

func (pl *plane) startAPIServer() error {
	return pl.startAndAwait(pl.apiserver, pl.apiURL)
}

// startSecondAPIServer starts the HA plane's apiserver b on its own link to etcd,
// and the load balancer in front of both (new connections go to a).
func (pl *plane) startSecondAPIServer() error {
	port := freePort()
	pl.ha.urlB = fmt.Sprintf("https://127.0.0.1:%d", port)
	etcdURL := "http://" + pl.ha.etcdLinks["b"].Addr()
	pl.ha.apiserverB = &process.Child{
		Name: "kube-apiserver b", Path: filepath.Join(pl.opts.binDir, "kube-apiserver"),
		Args: pl.apiserverArgs(port, etcdURL, "-b"), LogPath: pl.path("kube-apiserver-b.log"),
	}
	if err := pl.startAndAwait(pl.ha.apiserverB, pl.ha.urlB); err != nil {
		return err
	}
	progress("kube-apiserver b ready at %s", pl.ha.urlB)
	var err error
	backends := map[string]string{"a": strings.TrimPrefix(pl.apiURL, "https://"), "b": strings.TrimPrefix(pl.ha.urlB, "https://")}
	pl.ha.lb, err = forwarder.Start("load balancer", backends, "a")
	return err
}

// startAndAwait starts an apiserver and waits for its /readyz at url.
func (pl *plane) startAndAwait(apiserver *process.Child, url string) error {
	if err := apiserver.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		if !apiserver.Running() {
			return fmt.Errorf("%s exited; see %s", apiserver.Name, apiserver.LogPath)
		}
		if status, _, err := pl.requestTo(url, "GET", "/readyz", nil); err == nil && status == 200 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after 120s; see %s", apiserver.Name, apiserver.LogPath)
}

// waitFor polls GET path as admin until it answers 200.
func (pl *plane) waitFor(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if status, _, err := pl.request("GET", path, nil); err == nil && status == 200 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("GET %s: not found after %s", path, timeout)
}

func (pl *plane) restartAPIServer(down time.Duration) error {
	pl.apiserver.Stop(2 * time.Second)
	time.Sleep(down)
	return pl.startAPIServer()
}

// request calls the apiserver as admin.
func (pl *plane) request(method, path string, body any) (int, []byte, error) {
	return pl.requestTo(pl.apiURL, method, path, body)
}

// requestTo calls the apiserver at url as admin.
func (pl *plane) requestTo(url, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+pl.adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := pl.httpClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// create POSTs an object, accepting 409 (already exists).
func (pl *plane) create(path string, obj map[string]any) error {
	for attempt := 0; ; attempt++ {
		status, out, err := pl.request("POST", path, obj)
		if err == nil && (status == 201 || status == 200 || status == 409) {
			return nil
		}
		if attempt == 50 {
			if err != nil {
				return fmt.Errorf("POST %s: %w", path, err)
			}
			return fmt.Errorf("POST %s: %d %s", path, status, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (pl *plane) bootstrap() error {
	for _, ns := range []string{driverNamespace, forbiddenNamespace} {
		if err := pl.create("/api/v1/namespaces", obj("v1", "Namespace", ns, "")); err != nil {
			return err
		}
	}
	rule := func(resources []string, verbs ...string) map[string]any {
		return map[string]any{"apiGroups": []string{""}, "resources": resources, "verbs": verbs}
	}
	roles := map[string][]any{
		restrictedUser: {
			rule([]string{"pods"}, "get", "list", "watch", "create", "delete", "deletecollection", "patch"),
			// Spark 4.x deletes the app's Services by label when the driver stops (deletecollection).
			rule([]string{"services"}, "get", "list", "watch", "create", "delete", "deletecollection", "patch", "update"),
			rule([]string{"configmaps"}, "get", "list", "create", "delete", "deletecollection"),
			rule([]string{"persistentvolumeclaims"}, "get", "list", "create", "delete", "deletecollection"),
		},
		podsOnlyUser: {
			rule([]string{"pods"}, "get", "list", "watch", "create", "delete", "deletecollection", "patch"),
			rule([]string{"configmaps"}, "get", "list", "create", "delete", "deletecollection"),
		},
	}
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	rbac := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + driverNamespace
	for _, user := range names {
		role := obj("rbac.authorization.k8s.io/v1", "Role", user, driverNamespace)
		role["rules"] = roles[user]
		if err := pl.create(rbac+"/roles", role); err != nil {
			return err
		}
		binding := obj("rbac.authorization.k8s.io/v1", "RoleBinding", user, driverNamespace)
		binding["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user}
		binding["subjects"] = []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}}
		if err := pl.create(rbac+"/rolebindings", binding); err != nil {
			return err
		}
	}
	return nil
}

func obj(apiVersion, kind, name, namespace string) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
}

// writeEnv publishes where everything is, atomically: its presence means ready.
func (pl *plane) writeEnv() {
	vars := [][2]string{
		{"LOCALPLANE_DIR", pl.opts.dir},
		{"LOCALPLANE_PID", fmt.Sprint(os.Getpid())},
		{"LOCALPLANE_APISERVER", pl.apiURL},
		{"LOCALPLANE_PROXY", pl.proxyURL},
		{"LOCALPLANE_CONTROL", pl.controlURL},
		{"LOCALPLANE_ETCD", pl.etcd.Endpoint},
		{"LOCALPLANE_CA_FILE", pl.path("ca.crt")},
		{"LOCALPLANE_KUBECONFIG", pl.path("kubeconfig")},
		{"LOCALPLANE_ADMIN_TOKEN_FILE", pl.path("admin.token")},
		{"LOCALPLANE_RESTRICTED_TOKEN_FILE", pl.path("restricted.token")},
		{"LOCALPLANE_PODS_ONLY_TOKEN_FILE", pl.path("pods-only.token")},
		{"LOCALPLANE_CLIENT_CERT_FILE", pl.path("client.crt")},
		{"LOCALPLANE_CLIENT_KEY_FILE", pl.path("client.key")},
		{"LOCALPLANE_NAMESPACE", driverNamespace},
		{"LOCALPLANE_FORBIDDEN_NAMESPACE", forbiddenNamespace},
		{"LOCALPLANE_AUDIT_LOG", pl.path("audit.log")},
		{"LOCALPLANE_BIN_DIR", pl.opts.binDir},
	}
	if pl.ha != nil {
		vars = append(vars, [2]string{"LOCALPLANE_APISERVER_B", pl.ha.urlB},
			[2]string{"LOCALPLANE_LOAD_BALANCER", "https://" + pl.ha.lb.Addr()})
	}
	if pl.node != nil {
		// stop signals the supervisor, which outlives the plane to clean up.
		vars[1][1] = pl.node.supervisorPID
		vars = append(vars, pl.node.env()...)
	}
	var b strings.Builder
	for _, kv := range vars {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	tmp := pl.path("plane.env.tmp")
	must(os.WriteFile(tmp, []byte(b.String()), 0o644))
	must(os.Rename(tmp, pl.path("plane.env")))
}

func (pl *plane) shutdown() {
	if pl.node != nil {
		pl.node.stop()
	}
	if pl.proxy != nil {
		pl.proxy.Close()
	}
	if pl.kcm != nil {
		pl.kcm.Stop(5 * time.Second)
	}
	if pl.apiserver != nil {
		pl.apiserver.Stop(2 * time.Second)
	}
	if pl.ha != nil {
		if pl.ha.apiserverB != nil {
			pl.ha.apiserverB.Stop(2 * time.Second)
		}
		pl.ha.close()
	}
	if pl.etcd != nil {
		pl.etcd.Close()
	}
}

func writeKubeconfig(path, server, caFile string, users map[string]string, current, namespace string) {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: localplane\n  cluster:\n    server: %s\n    certificate-authority: %s\n", server, caFile)
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("users:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  user:\n    token: %s\n", n, users[n])
	}
	b.WriteString("contexts:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: localplane\n    user: %s\n", n, n)
		if namespace != "" {
			fmt.Fprintf(&b, "    namespace: %s\n", namespace)
		}
	}
	fmt.Fprintf(&b, "current-context: %s\n", current)
	must(os.WriteFile(path, []byte(b.String()), 0o600))
}

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["pods", "services", "configmaps"]
- level: None
`

// apiserverCertificate names what the apiserver's certificate is valid for:
// loopback, and in the sealed cluster its node IP and the kubernetes Service's
// ClusterIP and DNS names.
var apiserverCertificate = certs.Apiserver{
	DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + clusterDomain},
	IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(nodeIP), net.ParseIP(kubernetesSvcIP)},
}

func freePort() int {
	port, err := process.FreePort()
	must(err)
	return port
}

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	must(err)
	return b
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[localplane %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
