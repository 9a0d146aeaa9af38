// control.go: the test control endpoint (--control-listen, plain HTTP, no auth; bind it
// to 127.0.0.1 in the node namespace). Routes:
//
//	GET  /healthz                               "ok"
//	GET  /pods                                  JSON list: ns, name, uid, ip, pids, phase, cgroup
//	POST /pods/{ns}/{name}/oom                  OOM-kill the pod now: memory.limit_in_bytes is set
//	                                            just above current usage, then lowered stepwise,
//	                                            until the kernel kills (after 2 s an allocating
//	                                            "balloon" process joins the cgroup, so that idle
//	                                            processes get killed too); returns once every
//	                                            container is terminated, or 504 after 30 s
//	POST /pods/{ns}/{name}/signal?sig=SIG       send KILL|TERM|STOP|CONT|INT to every process of
//	                                            the pod (STOP simulates a hung executor)
//	POST /network/drop-gone-pod-ips?on=BOOL     when on, traffic to pod-CIDR IPs that no live pod
//	                                            holds is dropped silently (nft table inet PREFIX_agent)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
)

type podInfo struct {
	Namespace string      `json:"ns"`
	Name      string      `json:"name"`
	UID       string      `json:"uid"`
	IP        string      `json:"ip"`
	Pids      []int       `json:"pids"`
	Phase     v1.PodPhase `json:"phase"`
	Cgroup    string      `json:"cgroup"`
}

func (p *provider) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, p.podInfos())
	})
	mux.HandleFunc("POST /pods/{ns}/{name}/oom", func(w http.ResponseWriter, r *http.Request) {
		ps := p.get(r.PathValue("ns"), r.PathValue("name"))
		if ps == nil {
			http.Error(w, "no such pod on this node", http.StatusNotFound)
			return
		}
		if err := p.oomKill(ps, 30*time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
			return
		}
		fmt.Fprintln(w, "OOM-killed")
	})
	mux.HandleFunc("POST /pods/{ns}/{name}/signal", func(w http.ResponseWriter, r *http.Request) {
		ps := p.get(r.PathValue("ns"), r.PathValue("name"))
		if ps == nil {
			http.Error(w, "no such pod on this node", http.StatusNotFound)
			return
		}
		sigs := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM,
			"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "INT": syscall.SIGINT}
		sig, ok := sigs[r.URL.Query().Get("sig")]
		if !ok {
			http.Error(w, "sig must be one of KILL, TERM, STOP, CONT, INT", http.StatusBadRequest)
			return
		}
		pids := p.signalPod(ps, sig)
		log.Printf("control: pod %s: %s to pids %v", ps.key, sig, pids)
		writeJSONResponse(w, map[string]any{"signal": r.URL.Query().Get("sig"), "pids": pids})
	})
	mux.HandleFunc("POST /network/drop-gone-pod-ips", func(w http.ResponseWriter, r *http.Request) {
		on, err := strconv.ParseBool(r.URL.Query().Get("on"))
		if err != nil {
			http.Error(w, "on must be true or false", http.StatusBadRequest)
			return
		}
		if err := p.net.drop.setOn(on); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Printf("control: drop-gone-pod-ips=%v", on)
		writeJSONResponse(w, map[string]bool{"on": on})
	})
	return mux
}

func writeJSONResponse(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (p *provider) podInfos() []podInfo {
	pods, _ := p.GetPods(context.Background())
	out := []podInfo{}
	for _, pod := range pods {
		info := podInfo{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), IP: pod.Status.PodIP, Phase: pod.Status.Phase, Pids: []int{}}
		if ps := p.get(pod.Namespace, pod.Name); ps != nil {
			ps.mu.Lock()
			if pids := ps.pidsOf(); pids != nil {
				info.Pids = pids
			}
			if ps.cg != nil {
				info.Cgroup = ps.cg.Memory
			}
			ps.mu.Unlock()
		}
		out = append(out, info)
	}
	return out
}

// oomKill squeezes the pod's memory limit until the kernel OOM-kills a process of it and
// every container is terminated.
func (p *provider) oomKill(ps *podState, timeout time.Duration) error {
	ps.mu.Lock()
	cg := ps.cg
	running := len(ps.procs)
	ps.mu.Unlock()
	if cg == nil || running == 0 {
		return fmt.Errorf("pod %s has no running container", ps.key)
	}
	before := cg.oomKills()
	start := time.Now()
	deadline := start.Add(timeout)
	const step = 1 << 20
	limit := int64(0)
	var balloon *exec.Cmd
	defer func() {
		if balloon == nil {
			return
		}
		_ = balloon.Process.Kill()
		_ = balloon.Wait()
		if ws, ok := balloon.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && cg.oomKills() > before && !anyOOMKilled(ps) {
			// The kernel chose the balloon itself (the pod's processes are smaller than it):
			// that kill must not make a later SIGKILL of the container look like an OOM kill.
			ps.mu.Lock()
			ps.foreignOOMs += cg.oomKills() - before
			ps.mu.Unlock()
		}
	}()
	for time.Now().Before(deadline) {
		// An idle process never faults in new pages, so squeezing alone cannot kill it:
		// after 2 s add an unkillable balloon process that allocates inside the cgroup.
		if balloon == nil && time.Since(start) > 2*time.Second {
			// Make the pod's processes the OOM killer's first choice (lowering the
			// balloon's own score would need CAP_SYS_RESOURCE, which root may lack here).
			for _, pid := range cg.pids() {
				_ = writeFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), "1000")
			}
			balloon = exec.Command("/bin/sh", "-c", balloonScript, "oom-balloon", cg.Memory)
			if err := balloon.Start(); err != nil {
				balloon = nil
				return fmt.Errorf("start /bin/sh oom balloon: %w", err)
			}
			log.Printf("control: pod %s: OOM balloon pid %d", ps.key, balloon.Process.Pid)
		}
		if allExited(ps) {
			// The cgroup may be gone already: judge by the reported container states.
			if cg.oomKills() > before || anyOOMKilled(ps) {
				return nil
			}
			return fmt.Errorf("pod %s: containers exited without an OOM kill", ps.key)
		}
		usage, err := cg.memoryUsage()
		if err != nil {
			return err
		}
		if limit == 0 || usage+step < limit {
			limit = usage + step
		} else {
			limit -= step / 4 // refused below usage (EBUSY) is fine: reclaim makes room
		}
		if limit < step {
			limit = step
		}
		_ = cg.setMemoryLimit(limit)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pod %s: no OOM kill within %s (limit %d bytes); is the process allocating?", ps.key, timeout, limit)
}

func anyOOMKilled(ps *podState) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, cs := range ps.status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return true
		}
	}
	return false
}

// balloonScript is the OOM balloon: a tiny shell (its small RSS matters: the kernel
// kills the process with the highest badness, rss + oom_score_adj share) that joins the
// pod's memory cgroup ($1) and doubles a string until stopped, so that the kernel OOM-kills
// the pod's own processes (given oom_score_adj 1000) even when they do not allocate.
const balloonScript = `echo $$ > "$1/cgroup.procs" || exit 1
x=0123456789abcdef
while :; do x=$x$x; done`

func allExited(ps *podState) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.procs) == 0
}

func serveControl(addr string, h http.Handler) (func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --control-listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}
