package main

import (
	"fmt"

	"spark-k8s-native/localplane/internal/forwarder"
	"spark-k8s-native/localplane/internal/process"
)

// The highly available plane (--ha): a second kube-apiserver on the same etcd,
// as every managed cluster runs several behind a load balancer, each with a
// watch cache of its own. Each apiserver reaches etcd through a link of its
// own that a test can cut, so that one apiserver's cache freezes while the
// other follows etcd; clients reach them through a TCP load balancer that a
// test can move from one to the other, leaving the connections it had open
// (as a balancer whose backend went away may: held silent) or closing them.

// haParts are the second apiserver, the etcd links and the load balancer.
type haParts struct {
	apiserverB *process.Child
	urlB       string
	etcdLinks  map[string]*forwarder.Forwarder // by apiserver: "a", "b"
	lb         *forwarder.Forwarder
}

// startEtcdLinks makes one link to etcd per apiserver.
func startEtcdLinks(etcdEndpoint string) (map[string]*forwarder.Forwarder, error) {
	host := etcdEndpoint[len("http://"):]
	links := map[string]*forwarder.Forwarder{}
	for _, name := range []string{"a", "b"} {
		link, err := forwarder.Start("etcd link "+name, map[string]string{"etcd": host}, "etcd")
		if err != nil {
			return nil, err
		}
		links[name] = link
	}
	return links, nil
}

func (h *haParts) link(apiserver string) (*forwarder.Forwarder, error) {
	link, ok := h.etcdLinks[apiserver]
	if !ok {
		return nil, fmt.Errorf("no apiserver %q: the HA plane has a and b", apiserver)
	}
	return link, nil
}

func (h *haParts) stats() map[string]any {
	links := map[string]any{}
	for name, link := range h.etcdLinks {
		links[name] = link.Stats()
	}
	return map[string]any{"lb": h.lb.Stats(), "etcd_links": links}
}

func (h *haParts) close() {
	if h.lb != nil {
		h.lb.Close()
	}
	for _, link := range h.etcdLinks {
		link.Close()
	}
}
