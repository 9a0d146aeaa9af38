// Command coredns is the cluster DNS server of the local single-node test
// cluster (tests/localnode): an unmodified CoreDNS v1.15.0 built with only
// the plugins that cluster DNS needs there.
//
// Why this plugin set: the node network namespace is sealed (no uplink, no
// default route), so the server must only answer from the Kubernetes API.
//   - kubernetes: Service, EndpointSlice and pod A records for cluster.local
//     and the reverse zones;
//   - errors, log: error and query logging to stderr (the launcher's log file);
//   - health, ready: liveness and "informers synced" probes the launcher
//     waits for (/ready answers 200 only once the kubernetes plugin synced);
//   - cache, loadbalance: what a stock cluster Corefile uses;
//   - loop, reload: loop detection and Corefile reload, as in the stock setup;
//   - whoami: a trivial plugin handy for checking the server answers at all;
//   - bind: listen only on the given address (127.0.0.1 in tests, the node
//     IP in the node namespace) instead of every interface.
//
// Left out on purpose: forward, grpc, etcd and every cloud plugin (route53,
// azure, clouddns, ...): nothing may leave the machine, and names outside
// the cluster zones get SERVFAIL/REFUSED at once instead of a timeout.
// This lives in its own Go module because CoreDNS v1.15.0 needs client-go
// v0.37.1, while the plane (tests/localplane) uses v0.36.x.
//
// The wiring mirrors CoreDNS's own coredns.go + core/plugin/zplugin.go
// (generated from plugin.cfg): blank-import the plugin packages so they
// register themselves, and set dnsserver.Directives to the subset, kept in
// plugin.cfg order (that order is the order plugins see a query).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// directives is the subset of CoreDNS's plugin.cfg, in plugin.cfg order.
var directives = []string{
	"reload",
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
	"loop",
	"whoami",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
