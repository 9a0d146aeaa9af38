// network.go: pod networking. Each pod gets a network namespace /run/netns/PREFIX-pod-N,
// a veth pair vpN (node side, on the bridge, hairpin on) <-> eth0 (pod side), the pod IP
// 10.244.0.N/24 with a default route via the node IP. N is the last octet of the pod IP,
// so names and addresses line up. The agent itself runs inside the node network
// namespace, so the veth's node side is created there and the root namespace is untouched.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

type network struct {
	prefix string
	bridge string
	nodeIP net.IP
	cidr   *net.IPNet
	ones   int // prefix length of the pod CIDR

	mu   sync.Mutex
	used map[int]bool // last octets in use
	last int          // the last octet handed out (0: none yet)
	drop *dropRules
}

type podNet struct {
	N     int
	IP    net.IP
	NetNS string // name, e.g. skn3fa9c1-pod-5
	Veth  string // node side, vp5
}

func (p *podNet) NetNSPath() string { return filepath.Join("/run/netns", p.NetNS) }

func newNetwork(prefix, bridge, nodeIP, podCIDR string) (*network, error) {
	ip := net.ParseIP(nodeIP).To4()
	if ip == nil {
		return nil, fmt.Errorf("--node-ip %q is not an IPv4 address", nodeIP)
	}
	_, cidr, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("--pod-cidr %q: %w", podCIDR, err)
	}
	ones, bits := cidr.Mask.Size()
	if bits != 32 || ones != 24 {
		return nil, fmt.Errorf("--pod-cidr %q: only IPv4 /24 pod CIDRs are supported", podCIDR)
	}
	n := &network{prefix: prefix, bridge: bridge, nodeIP: ip, cidr: cidr, ones: ones, used: map[int]bool{}}
	n.drop = &dropRules{table: prefix + "_agent", cidr: cidr.String(), nodeIP: ip.String(), live: map[string]string{}}
	return n, nil
}

func (n *network) ipFor(octet int) net.IP {
	ip := make(net.IP, 4)
	copy(ip, n.cidr.IP.To4())
	ip[3] = byte(octet)
	return ip
}

// allocate reserves the next free pod IP (.2-.254, skipping the node IP).
// allocate hands out the next free address after the last one given, round
// robin, as the host-local IPAM plugin of a real node does: a gone pod's IP is
// not reused at once, so a peer that still holds it reaches nobody, not the
// next pod (which is what a test of a gone executor must see).
func (n *network) allocate() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	next := n.last + 1
	if next < 2 || next > 254 {
		next = 2
	}
	for i := 0; i < 253; i++ {
		o := 2 + (next-2+i)%253
		if n.used[o] || n.ipFor(o).Equal(n.nodeIP) {
			continue
		}
		n.used[o] = true
		n.last = o
		return o, nil
	}
	return 0, fmt.Errorf("no free pod IP left in %s", n.cidr)
}

func (n *network) release(o int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, o)
}

// setup creates the pod's namespace, veth and addresses. The returned undo removes
// everything setup made, in reverse order; on error setup has undone itself already.
func (n *network) setup() (*podNet, func() error, error) {
	o, err := n.allocate()
	if err != nil {
		return nil, nil, err
	}
	pn := &podNet{N: o, IP: n.ipFor(o), NetNS: fmt.Sprintf("%s-pod-%d", n.prefix, o), Veth: fmt.Sprintf("vp%d", o)}
	var undo undoStack
	undo.push(func() error { n.release(o); return nil })

	// A leftover with our exact name can only be ours (same prefix): remove it first.
	if _, err := os.Stat(pn.NetNSPath()); err == nil {
		_ = run("ip", "netns", "del", pn.NetNS)
	}
	_ = run("ip", "link", "del", pn.Veth)

	steps := []struct {
		args []string
		undo []string
	}{
		{[]string{"ip", "netns", "add", pn.NetNS}, []string{"ip", "netns", "del", pn.NetNS}},
		{[]string{"ip", "link", "add", pn.Veth, "type", "veth", "peer", "name", "eth0", "netns", pn.NetNS}, []string{"ip", "link", "del", pn.Veth}},
		{[]string{"ip", "link", "set", pn.Veth, "master", n.bridge}, nil},
		{[]string{"ip", "link", "set", pn.Veth, "type", "bridge_slave", "hairpin", "on"}, nil},
		{[]string{"ip", "link", "set", pn.Veth, "up"}, nil},
		{[]string{"ip", "-n", pn.NetNS, "link", "set", "lo", "up"}, nil},
		{[]string{"ip", "-n", pn.NetNS, "addr", "add", fmt.Sprintf("%s/%d", pn.IP, n.ones), "dev", "eth0"}, nil},
		{[]string{"ip", "-n", pn.NetNS, "link", "set", "eth0", "up"}, nil},
		{[]string{"ip", "-n", pn.NetNS, "route", "add", "default", "via", n.nodeIP.String()}, nil},
		// No ICMP redirects: in drop-gone-pod-ips mode pod-to-pod traffic must stay routed via the node.
		{[]string{"ip", "netns", "exec", pn.NetNS, "sysctl", "-qw", "net.ipv4.conf.all.accept_redirects=0", "net.ipv4.conf.eth0.accept_redirects=0"}, nil},
	}
	for _, s := range steps {
		if err := run(s.args...); err != nil {
			_ = undo.run()
			return nil, nil, err
		}
		if s.undo != nil {
			args := s.undo
			undo.push(func() error { return run(args...) })
		}
	}
	if err := n.drop.add(pn.IP.String(), pn.NetNS); err != nil {
		_ = undo.run()
		return nil, nil, err
	}
	undo.push(func() error { return n.drop.remove(pn.IP.String()) })
	return pn, undo.run, nil
}

// run runs a command and wraps its failure with the command line and its output.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// undoStack collects cleanup steps registered next to what they undo; run executes
// them last-in first-out and returns every error.
type undoStack struct {
	mu    sync.Mutex
	steps []func() error
}

func (u *undoStack) push(f func() error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.steps = append(u.steps, f)
}

func (u *undoStack) run() error {
	u.mu.Lock()
	steps := u.steps
	u.steps = nil
	u.mu.Unlock()
	var errs []string
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i](); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup: %s", strings.Join(errs, "; "))
	}
	return nil
}
