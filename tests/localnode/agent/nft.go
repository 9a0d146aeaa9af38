// nft.go: the optional "drop traffic to gone pod IPs" mode. On one bridge a packet to a
// pod IP nobody holds fails fast (ARP fails: "No route to host"); on a routed multi-node
// network it is silently lost. When enabled, the table `inet PREFIX_agent` in the node
// namespace holds a set of live pod IPs and drops, in forward and output, everything to
// the pod CIDR that is neither the node IP nor in the set. The set follows pods as they
// get and release their IPs.
//
// That covers traffic from the node namespace (the driver). A pod sending to a gone IP
// would still resolve it by ARP on the bridge and fail fast, so while the mode is on every
// live pod routes the pod CIDR via the node IP (`10.244.0.0/24 via 10.244.0.1 onlink`,
// as on a routed network), the node forwards pod-to-pod traffic (net.ipv4.ip_forward=1
// in the node namespace, restored when the mode goes off) and the forward rule drops.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
)

type dropRules struct {
	table  string // PREFIX_agent
	cidr   string
	nodeIP string

	mu         sync.Mutex
	on         bool
	live       map[string]string // pod IP -> netns name
	forwardWas string            // ip_forward before the mode was switched on
}

const ipForward = "/proc/sys/net/ipv4/ip_forward"

// routeViaNode switches one pod between the bridge's on-link /24 route and routing the
// pod CIDR through the node.
func (d *dropRules) routeViaNode(netns, ip string, on bool) error {
	if on {
		return run("ip", "-n", netns, "route", "replace", d.cidr, "via", d.nodeIP, "dev", "eth0", "onlink")
	}
	return run("ip", "-n", netns, "route", "replace", d.cidr, "dev", "eth0", "proto", "kernel", "scope", "link", "src", ip)
}

func nft(script string) error {
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft -f - (%s): %w: %s", strings.TrimSpace(script), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setOn creates (on) or deletes (off) the table.
func (d *dropRules) setOn(on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if on == d.on {
		return nil
	}
	if !on {
		var errs []string
		if err := nft(fmt.Sprintf("delete table inet %s", d.table)); err != nil {
			errs = append(errs, err.Error())
		}
		for ip, ns := range d.live {
			if err := d.routeViaNode(ns, ip, false); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if d.forwardWas != "" {
			if err := writeFile(ipForward, d.forwardWas); err != nil {
				errs = append(errs, err.Error())
			}
			d.forwardWas = ""
		}
		d.on = false
		if len(errs) > 0 {
			return fmt.Errorf("drop-gone-pod-ips off: %s", strings.Join(errs, "; "))
		}
		return nil
	}
	var ips []string
	for ip := range d.live {
		ips = append(ips, ip)
	}
	sort.Strings(ips)
	elems := ""
	if len(ips) > 0 {
		elems = fmt.Sprintf("elements = { %s }", strings.Join(ips, ", "))
	}
	rule := fmt.Sprintf("ip daddr %s ip daddr != %s ip daddr != @live drop", d.cidr, d.nodeIP)
	script := fmt.Sprintf(`table inet %[1]s {
	set live { type ipv4_addr; %[2]s }
	chain forward { type filter hook forward priority -5; policy accept; %[3]s; }
	chain output { type filter hook output priority -5; policy accept; %[3]s; }
}
`, d.table, elems, rule)
	// Replace any stale table of ours from a previous toggle.
	_ = nft(fmt.Sprintf("delete table inet %s", d.table))
	if err := nft(script); err != nil {
		return err
	}
	d.on = true
	if cur, err := os.ReadFile(ipForward); err == nil && strings.TrimSpace(string(cur)) != "1" {
		if err := writeFile(ipForward, "1"); err != nil {
			return err
		}
		d.forwardWas = strings.TrimSpace(string(cur))
	}
	for ip, ns := range d.live {
		if err := d.routeViaNode(ns, ip, true); err != nil {
			return err
		}
	}
	return nil
}

func (d *dropRules) add(ip, netns string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live[ip] = netns
	if !d.on {
		return nil
	}
	if err := nft(fmt.Sprintf("add element inet %s live { %s }", d.table, ip)); err != nil {
		return err
	}
	return d.routeViaNode(netns, ip, true)
}

func (d *dropRules) remove(ip string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.live, ip)
	if !d.on {
		return nil
	}
	return nft(fmt.Sprintf("delete element inet %s live { %s }", d.table, ip))
}

// shutdown deletes the table if it exists.
func (d *dropRules) shutdown() error {
	return d.setOn(false)
}
