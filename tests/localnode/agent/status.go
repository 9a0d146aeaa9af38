// status.go: pod status as a kubelet reports it (phase, conditions, container states)
// and the per-pod files a kubelet writes: /etc/hosts, /etc/resolv.conf, /etc/hostname.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func initialStatus(pod *v1.Pod, nodeIP string) v1.PodStatus {
	now := metav1.Now()
	st := v1.PodStatus{
		Phase:     v1.PodPending,
		HostIP:    nodeIP,
		HostIPs:   []v1.HostIP{{IP: nodeIP}},
		StartTime: &now,
		QOSClass:  pod.Status.QOSClass,
	}
	if rp := pod.Spec.RestartPolicy; rp != "" && rp != v1.RestartPolicyNever {
		st.Message = fmt.Sprintf("node-agent runs containers once: restartPolicy %s is treated as Never", rp)
	}
	setCondition(&st, v1.PodScheduled, v1.ConditionTrue, "")
	setCondition(&st, v1.PodReadyToStartContainers, v1.ConditionFalse, "")
	if len(pod.Spec.InitContainers) > 0 {
		setCondition(&st, v1.PodInitialized, v1.ConditionFalse, "ContainersNotInitialized")
	} else {
		setCondition(&st, v1.PodInitialized, v1.ConditionTrue, "")
	}
	setCondition(&st, v1.ContainersReady, v1.ConditionFalse, "ContainersNotReady")
	setCondition(&st, v1.PodReady, v1.ConditionFalse, "ContainersNotReady")
	waiting := "ContainerCreating"
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, newContainerStatus(c, waiting))
	}
	if len(pod.Spec.InitContainers) > 0 {
		waiting = "PodInitializing"
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, newContainerStatus(c, waiting))
	}
	return st
}

func newContainerStatus(c v1.Container, reason string) v1.ContainerStatus {
	f := false
	return v1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: "process://" + c.Image, Started: &f,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}},
	}
}

func setCondition(st *v1.PodStatus, t v1.PodConditionType, s v1.ConditionStatus, reason string) {
	now := metav1.Now()
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].LastTransitionTime = now
			}
			st.Conditions[i].Status, st.Conditions[i].Reason = s, reason
			return
		}
	}
	st.Conditions = append(st.Conditions, v1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now})
}

// containerStatus finds a main or init container status by name.
func containerStatus(st *v1.PodStatus, name string) *v1.ContainerStatus {
	for i := range st.ContainerStatuses {
		if st.ContainerStatuses[i].Name == name {
			return &st.ContainerStatuses[i]
		}
	}
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].Name == name {
			return &st.InitContainerStatuses[i]
		}
	}
	return nil
}

func setContainerState(st *v1.PodStatus, name string, state v1.ContainerState) {
	cs := containerStatus(st, name)
	if cs == nil {
		return
	}
	cs.State = state
	running := state.Running != nil
	cs.Started = &running
	cs.Ready = running
}

func containerID(pid int) string { return fmt.Sprintf("process://%d", pid) }

func setContainerID(st *v1.PodStatus, name string, pid int) {
	if cs := containerStatus(st, name); cs != nil {
		cs.ContainerID = containerID(pid)
	}
}

// updateReadiness: ready = running (no probes); Ready/ContainersReady follow the containers.
func updateReadiness(st *v1.PodStatus) {
	ready := len(st.ContainerStatuses) > 0
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			ready = false
		}
	}
	if ready {
		setCondition(st, v1.ContainersReady, v1.ConditionTrue, "")
		setCondition(st, v1.PodReady, v1.ConditionTrue, "")
		return
	}
	setCondition(st, v1.ContainersReady, v1.ConditionFalse, "ContainersNotReady")
	setCondition(st, v1.PodReady, v1.ConditionFalse, "ContainersNotReady")
}

// setPhase sets a terminal (or any) phase with the kubelet's conditions for it.
func setPhase(st *v1.PodStatus, pod *v1.Pod, phase v1.PodPhase) {
	st.Phase = phase
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		setCondition(st, v1.ContainersReady, v1.ConditionFalse, "PodCompleted")
		setCondition(st, v1.PodReady, v1.ConditionFalse, "PodCompleted")
		setCondition(st, v1.PodReadyToStartContainers, v1.ConditionFalse, "")
		if phase == v1.PodFailed && len(pod.Spec.InitContainers) > 0 {
			for _, cs := range st.InitContainerStatuses {
				if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
					return
				}
			}
		}
		setCondition(st, v1.PodInitialized, v1.ConditionTrue, "")
	}
}

func podHostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// writeEtcFiles writes hosts, resolv.conf and hostname into the pod's state dir.
func writeEtcFiles(dir string, pod *v1.Pod, podIP string, cfg *agentConfig) error {
	host := podHostname(pod)
	var hosts strings.Builder
	hosts.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if pod.Spec.Subdomain != "" {
		fmt.Fprintf(&hosts, "%s\t%s.%s.%s.svc.%s\t%s\n", podIP, host, pod.Spec.Subdomain, pod.Namespace, cfg.ClusterDomain, host)
	} else {
		fmt.Fprintf(&hosts, "%s\t%s\n", podIP, host)
	}
	for _, ha := range pod.Spec.HostAliases {
		fmt.Fprintf(&hosts, "\n# Entries added by HostAliases.\n%s\t%s\n", ha.IP, strings.Join(ha.Hostnames, "\t"))
	}

	resolv, err := resolvConf(pod, cfg)
	if err != nil {
		return err
	}
	files := map[string]string{"hosts": hosts.String(), "resolv.conf": resolv, "hostname": host + "\n"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

func resolvConf(pod *v1.Pod, cfg *agentConfig) (string, error) {
	var servers, searches, options []string
	switch pod.Spec.DNSPolicy {
	case v1.DNSDefault:
		host, err := os.ReadFile("/etc/resolv.conf")
		if err != nil {
			return "", fmt.Errorf("read host /etc/resolv.conf for dnsPolicy Default: %w", err)
		}
		for _, line := range strings.Split(string(host), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "nameserver":
				servers = append(servers, f[1])
			case "search":
				searches = append(searches, f[1:]...)
			case "options":
				options = append(options, f[1:]...)
			}
		}
	case v1.DNSNone:
	default: // ClusterFirst (and ClusterFirstWithHostNet, hostNetwork is not supported)
		ns, d := pod.Namespace, cfg.ClusterDomain
		servers = []string{cfg.ClusterDNS}
		searches = []string{ns + ".svc." + d, "svc." + d, d}
		options = []string{"ndots:5"}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		servers = append(servers, dc.Nameservers...)
		searches = append(searches, dc.Searches...)
		for _, o := range dc.Options {
			if o.Value != nil {
				options = append(options, o.Name+":"+*o.Value)
			} else {
				options = append(options, o.Name)
			}
		}
	}
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.String(), nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
