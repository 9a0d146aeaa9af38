// provider.go: the pod lifecycle (virtual-kubelet's PodLifecycleHandler + PodNotifier).
// CreatePod records the pod as Pending and starts runPod in the background: network,
// cgroups, hosts/resolv.conf and volumes, then init containers one by one, then the main
// containers as processes (see podinit.go). Status changes are pushed to virtual-kubelet
// through the NotifyPods callback. DeletePod terminates gracefully (SIGTERM, SIGKILL after
// the grace period), then deletes the pod object with grace 0 itself and frees everything.
//
// restartPolicy is always treated as Never: containers run once (a pod asking for Always
// or OnFailure gets a note in status.message).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

type provider struct {
	cfg         *agentConfig
	client      kubernetes.Interface
	podLister   corev1listers.PodLister
	services    corev1listers.ServiceLister
	allocatable v1.ResourceList
	net         *network
	self        string // path of this executable, re-executed as pod-init

	mu     sync.Mutex
	pods   map[string]*podState // namespace/name
	notify func(*v1.Pod)
}

// podState is everything the agent knows about one pod.
type podState struct {
	key    string
	ctx    context.Context // cancelled when the pod is being deleted
	cancel context.CancelFunc
	dir    string // STATE/pods/<uid>

	mu       sync.Mutex
	pod      *v1.Pod
	status   v1.PodStatus
	net      *podNet
	cg       *podCgroup
	procs    map[string]*os.Process // running containers by name
	deleting bool
	// foreignOOMs counts oom_kill events in the pod's cgroup that hit the agent's own OOM
	// balloon (control.go), not a container.
	foreignOOMs int64
	infra       undoStack     // network + cgroup teardown
	done        chan struct{} // closed once no container runs or will start
}

var errDeleting = errors.New("pod is being deleted")

func podKey(ns, name string) string { return ns + "/" + name }

func (p *provider) get(ns, name string) *podState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(ns, name)]
}

// snapshot is the pod as virtual-kubelet should see it (caller holds ps.mu).
func (ps *podState) snapshot() *v1.Pod {
	pod := ps.pod.DeepCopy()
	pod.Status = *ps.status.DeepCopy()
	return pod
}

// update mutates the pod's status and pushes it to virtual-kubelet.
func (p *provider) update(ps *podState, f func(st *v1.PodStatus)) {
	ps.mu.Lock()
	f(&ps.status)
	pod := ps.snapshot()
	ps.mu.Unlock()
	p.mu.Lock()
	notify := p.notify
	p.mu.Unlock()
	if notify != nil {
		notify(pod)
	}
}

// NotifyPods implements node.PodNotifier.
func (p *provider) NotifyPods(_ context.Context, f func(*v1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = f
}

func (p *provider) CreatePod(_ context.Context, pod *v1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	if old, ok := p.pods[key]; ok && old.pod.UID == pod.UID {
		p.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ps := &podState{
		key: key, ctx: ctx, cancel: cancel,
		dir:   filepath.Join(p.cfg.StateDir, "pods", string(pod.UID)),
		pod:   pod.DeepCopy(),
		procs: map[string]*os.Process{},
		done:  make(chan struct{}),
	}
	ps.status = initialStatus(pod, p.cfg.NodeIP)
	p.pods[key] = ps
	p.mu.Unlock()

	log.Printf("pod %s (%s): created", key, pod.UID)
	p.update(ps, func(*v1.PodStatus) {})
	go p.runPod(ps)
	return nil
}

// UpdatePod: nothing of a running process can change (images, labels are not applied).
func (p *provider) UpdatePod(_ context.Context, pod *v1.Pod) error {
	if ps := p.get(pod.Namespace, pod.Name); ps != nil && ps.pod.UID == pod.UID {
		ps.mu.Lock()
		ps.pod.Labels, ps.pod.Annotations = pod.Labels, pod.Annotations
		ps.mu.Unlock()
	}
	return nil
}

func (p *provider) GetPod(_ context.Context, ns, name string) (*v1.Pod, error) {
	ps := p.get(ns, name)
	if ps == nil {
		return nil, errdefs.NotFoundf("pod %s/%s not found", ns, name)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.snapshot(), nil
}

func (p *provider) GetPodStatus(ctx context.Context, ns, name string) (*v1.PodStatus, error) {
	pod, err := p.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

func (p *provider) GetPods(context.Context) ([]*v1.Pod, error) {
	p.mu.Lock()
	all := make([]*podState, 0, len(p.pods))
	for _, ps := range p.pods {
		all = append(all, ps)
	}
	p.mu.Unlock()
	out := make([]*v1.Pod, 0, len(all))
	for _, ps := range all {
		ps.mu.Lock()
		out = append(out, ps.snapshot())
		ps.mu.Unlock()
	}
	return out, nil
}

// DeletePod starts a graceful termination and returns; it may be called repeatedly.
func (p *provider) DeletePod(_ context.Context, pod *v1.Pod) error {
	ps := p.get(pod.Namespace, pod.Name)
	if ps == nil || (pod.UID != "" && ps.pod.UID != pod.UID) {
		if pod.DeletionTimestamp != nil && pod.UID != "" {
			// Being deleted but nothing of it runs here (e.g. the agent restarted): no
			// reason to wait out the grace period.
			go p.deleteObject(pod.Namespace, pod.Name, string(pod.UID))
		}
		return errdefs.NotFoundf("pod %s/%s not found", pod.Namespace, pod.Name)
	}
	ps.mu.Lock()
	if ps.deleting {
		ps.mu.Unlock()
		return nil
	}
	ps.deleting = true
	ps.mu.Unlock()
	ps.cancel()
	grace := int64(30)
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	go p.terminate(ps, time.Duration(grace)*time.Second)
	return nil
}

func (p *provider) terminate(ps *podState, grace time.Duration) {
	log.Printf("pod %s: terminating (grace %s)", ps.key, grace)
	// virtual-kubelet deletes the object itself once the grace period is over:
	// SIGKILL a little earlier than a kubelet would, so that the exit code
	// (137) reaches the API, and watchers such as Spark, before the object goes.
	killAfter := grace - 500*time.Millisecond
	if grace <= time.Second {
		killAfter = grace / 2
	}
	killAt := time.Now().Add(killAfter)
	// preStop hooks first, within the grace period (Spark's decommission script), then SIGTERM.
	p.runPreStopHooks(ps, killAt)
	p.signalPod(ps, syscall.SIGTERM)
	select {
	case <-ps.done:
	case <-time.After(time.Until(killAt)):
		log.Printf("pod %s: grace period over, SIGKILL", ps.key)
		p.signalPod(ps, syscall.SIGKILL)
		<-ps.done
	}
	p.waitStatusSynced(ps)

	// Forget the pod first, so that a new pod of the same name is never mistaken for it.
	p.mu.Lock()
	if p.pods[ps.key] == ps {
		delete(p.pods, ps.key)
	}
	p.mu.Unlock()

	p.deleteObject(ps.pod.Namespace, ps.pod.Name, string(ps.pod.UID))
	p.teardown(ps)
	log.Printf("pod %s: deleted", ps.key)
}

// deleteObject deletes the pod object with grace 0 (only the incarnation with this UID).
func (p *provider) deleteObject(ns, name, uid string) {
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(uid)
	for i := 0; i < 5; i++ {
		err := p.client.CoreV1().Pods(ns).Delete(context.Background(), name, opts)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return
		}
		log.Printf("pod %s/%s: delete with grace 0: %v", ns, name, err)
		time.Sleep(500 * time.Millisecond)
	}
}

// waitStatusSynced waits (briefly) until the API shows every container
// terminated, so that the exit codes reach watchers (Spark counts a failed
// executor from them) before the object goes away. "Not running" is not
// enough: a status update that lost a conflict leaves the old state there.
func (p *provider) waitStatusSynced(ps *podState) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		pod, err := p.podLister.Pods(ps.pod.Namespace).Get(ps.pod.Name)
		if err != nil || pod.UID != ps.pod.UID {
			return
		}
		synced := len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers)
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Terminated == nil {
				synced = false
			}
		}
		if synced {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Printf("pod %s: the API did not show its containers terminated within 5s; deleting it anyway", ps.key)
}

// teardown frees network/cgroups (if still held) and removes the state dir (with the logs).
func (p *provider) teardown(ps *podState) {
	if err := ps.infra.run(); err != nil {
		log.Printf("pod %s: %v", ps.key, err)
	}
	if err := os.RemoveAll(ps.dir); err != nil {
		log.Printf("pod %s: rm -rf %s: %v", ps.key, ps.dir, err)
	}
}

func (ps *podState) foreignOOMCount() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.foreignOOMs
}

// pidsOf lists the pod's processes: its cgroup members plus the container processes.
func (ps *podState) pidsOf() []int {
	seen := map[int]bool{}
	var pids []int
	if ps.cg != nil {
		for _, pid := range ps.cg.pids() {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	for _, proc := range ps.procs {
		if !seen[proc.Pid] {
			pids = append(pids, proc.Pid)
		}
	}
	sort.Ints(pids)
	return pids
}

func (p *provider) signalPod(ps *podState, sig syscall.Signal) []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pids := ps.pidsOf()
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return pids
}

// shutdown kills every pod's processes and frees everything (agent stop).
func (p *provider) shutdown() {
	p.mu.Lock()
	all := make([]*podState, 0, len(p.pods))
	for _, ps := range p.pods {
		all = append(all, ps)
	}
	p.pods = map[string]*podState{}
	p.mu.Unlock()
	for _, ps := range all {
		ps.mu.Lock()
		ps.deleting = true
		ps.mu.Unlock()
		ps.cancel()
		p.signalPod(ps, syscall.SIGKILL)
	}
	for _, ps := range all {
		select {
		case <-ps.done:
		case <-time.After(5 * time.Second):
			log.Printf("pod %s: processes did not exit after SIGKILL", ps.key)
		}
		p.teardown(ps)
	}
}

// containerPlan is what a container will run, decided before anything starts.
type containerPlan struct {
	c        *v1.Container
	init     bool
	argv     []string
	imageEnv []string
}

// runPod is the whole life of a pod's processes; it closes ps.done when it returns.
func (p *provider) runPod(ps *podState) {
	defer close(ps.done)
	pod := ps.pod

	plans, err := p.plan(ps)
	if err != nil {
		var nf *errImageNotFound
		if errors.As(err, &nf) {
			log.Printf("pod %s: %v", ps.key, err)
			return // stays Pending with waiting{ErrImagePull}, as with a kubelet
		}
		p.failSetup(ps, "CreateContainerConfigError", err)
		return
	}

	env, vols, tokens, err := p.setupInfra(ps)
	if err != nil {
		if errors.Is(err, errDeleting) {
			return
		}
		p.failSetup(ps, "CreateContainerConfigError", err)
		return
	}
	// Service-account tokens are renewed while the pod's containers run (tokens.go).
	renewing, stopRenewing := context.WithCancel(ps.ctx)
	defer stopRenewing()
	go renewTokens(renewing, ps.key, tokens, clientTokenRequester(p.client))
	// The pod's processes are gone once runPod returns: free IP, veth, netns and cgroups
	// right away (a kubelet tears the sandbox down too); state and logs stay until deletion.
	defer func() {
		if err := ps.infra.run(); err != nil {
			log.Printf("pod %s: %v", ps.key, err)
		}
	}()

	for _, pl := range plans {
		if !pl.init {
			continue
		}
		res := p.runContainer(ps, pl, env, vols)
		if res != 0 {
			p.update(ps, func(st *v1.PodStatus) {
				setPhase(st, pod, v1.PodFailed)
				for i := range st.ContainerStatuses {
					st.ContainerStatuses[i].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}
				}
			})
			return
		}
	}
	p.update(ps, func(st *v1.PodStatus) {
		setCondition(st, v1.PodInitialized, v1.ConditionTrue, "")
	})

	var wg sync.WaitGroup
	for _, pl := range plans {
		if pl.init {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.runContainer(ps, pl, env, vols)
		}()
	}
	wg.Wait()
	p.update(ps, func(st *v1.PodStatus) {
		phase := v1.PodSucceeded
		for _, cs := range st.ContainerStatuses {
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				phase = v1.PodFailed
			}
		}
		setPhase(st, pod, phase)
	})
	log.Printf("pod %s: all containers finished", ps.key)
}

// plan resolves every container's command from the image table.
func (p *provider) plan(ps *podState) ([]containerPlan, error) {
	images, err := loadImages(p.cfg.Images)
	if err != nil {
		return nil, err
	}
	var plans []containerPlan
	var missing error
	add := func(c *v1.Container, init bool) error {
		argv, imageEnv, err := resolveCommand(images, p.cfg.Images, c)
		var nf *errImageNotFound
		if errors.As(err, &nf) {
			missing = err
			p.update(ps, func(st *v1.PodStatus) {
				setContainerState(st, c.Name, v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull", Message: nf.msg}})
			})
			return nil
		}
		if err != nil {
			return err
		}
		plans = append(plans, containerPlan{c: c, init: init, argv: argv, imageEnv: imageEnv})
		return nil
	}
	for i := range ps.pod.Spec.InitContainers {
		if err := add(&ps.pod.Spec.InitContainers[i], true); err != nil {
			return nil, err
		}
	}
	for i := range ps.pod.Spec.Containers {
		if err := add(&ps.pod.Spec.Containers[i], false); err != nil {
			return nil, err
		}
	}
	if missing != nil {
		return nil, missing
	}
	return plans, nil
}

// failSetup marks a pod that cannot be started as Failed, with the reason on every container.
func (p *provider) failSetup(ps *podState, reason string, err error) {
	log.Printf("pod %s: %s: %v", ps.key, reason, err)
	p.update(ps, func(st *v1.PodStatus) {
		for _, c := range append(append([]v1.Container{}, ps.pod.Spec.InitContainers...), ps.pod.Spec.Containers...) {
			setContainerState(st, c.Name, v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: err.Error()}})
		}
		setPhase(st, ps.pod, v1.PodFailed)
		st.Reason, st.Message = reason, err.Error()
	})
	if uerr := ps.infra.run(); uerr != nil {
		log.Printf("pod %s: %v", ps.key, uerr)
	}
}

// setupInfra makes the pod's network, cgroups, hosts/resolv.conf and volumes, and returns
// the service-account tokens written, to be renewed. Everything made is registered in
// ps.infra (network, cgroups) or lives in ps.dir.
func (p *provider) setupInfra(ps *podState) (*envResolver, map[string]volumeSource, []*projectedToken, error) {
	pod := ps.pod
	for _, d := range []string{ps.dir, filepath.Join(ps.dir, "logs"), filepath.Join(ps.dir, "containers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	pn, undoNet, err := p.net.setup()
	if err != nil {
		return nil, nil, nil, err
	}
	ps.infra.push(undoNet)

	memLimit, milliCPU := podResources(pod)
	cg, undoCg, err := createPodCgroup(p.cfg.Prefix, string(pod.UID), memLimit, milliCPU)
	if err != nil {
		return nil, nil, nil, err
	}
	ps.infra.push(undoCg)
	ps.mu.Lock()
	ps.net, ps.cg = pn, cg
	ps.mu.Unlock()

	if err := writeEtcFiles(ps.dir, pod, pn.IP.String(), p.cfg); err != nil {
		return nil, nil, nil, err
	}
	env := &envResolver{client: p.client, services: p.services, allocatable: p.allocatable, podIP: pn.IP.String(), hostIP: p.cfg.NodeIP}

	p.update(ps, func(st *v1.PodStatus) {
		st.PodIP = pn.IP.String()
		st.PodIPs = []v1.PodIP{{IP: pn.IP.String()}}
		setCondition(st, v1.PodReadyToStartContainers, v1.ConditionTrue, "")
	})

	// Volumes: like a kubelet, retry for a while (a configMap may be created just after the pod).
	vb := &volumeBuilder{client: p.client, env: env, dir: filepath.Join(ps.dir, "volumes")}
	deadline := time.Now().Add(60 * time.Second)
	for {
		vols, err := vb.prepare(ps.ctx, pod)
		if err == nil {
			return env, vols, vb.tokens, nil
		}
		if ps.ctx.Err() != nil {
			return nil, nil, nil, errDeleting
		}
		if time.Now().After(deadline) {
			return nil, nil, nil, err
		}
		log.Printf("pod %s: volumes not ready, retrying: %v", ps.key, err)
		time.Sleep(time.Second)
	}
}

// podResources: memory limit (sum of the containers' limits, only if all have one; at
// least the largest init container limit) and the CPU request in milliCPU.
func podResources(pod *v1.Pod) (int64, int64) {
	var mem, cpu int64
	all := true
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
			mem += q.Value()
		} else {
			all = false
		}
		if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
			cpu += q.MilliValue()
		}
	}
	if !all {
		return 0, cpu
	}
	for _, c := range pod.Spec.InitContainers {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok {
			return 0, cpu
		}
		if q.Value() > mem {
			mem = q.Value()
		}
	}
	return mem, cpu
}

// runContainer starts one container, waits for it and records its end; returns the exit code.
func (p *provider) runContainer(ps *podState, pl containerPlan, env *envResolver, vols map[string]volumeSource) int {
	name := pl.c.Name
	proc, errFile, err := p.startContainer(ps, pl, env, vols)
	if err != nil {
		if errors.Is(err, errDeleting) {
			return 137
		}
		log.Printf("pod %s: container %s: %v", ps.key, name, err)
		now := metav1.Now()
		p.update(ps, func(st *v1.PodStatus) {
			setContainerState(st, name, v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: startErrorExitCode, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now}})
		})
		return startErrorExitCode
	}
	oomBefore := ps.cg.oomKills() - ps.foreignOOMCount()
	started := metav1.Now()
	p.update(ps, func(st *v1.PodStatus) {
		setContainerState(st, name, v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}})
		setContainerID(st, name, proc.Pid)
		if !pl.init {
			st.Phase = v1.PodRunning
			updateReadiness(st)
		}
	})
	log.Printf("pod %s: container %s started, pid %d: %v", ps.key, name, proc.Pid, pl.argv)

	state, werr := proc.Wait()
	finished := metav1.Now()

	term := &v1.ContainerStateTerminated{StartedAt: started, FinishedAt: finished, ContainerID: containerID(proc.Pid)}
	switch {
	case werr != nil:
		term.ExitCode, term.Reason, term.Message = startErrorExitCode, "Error", fmt.Sprintf("wait: %v", werr)
	default:
		ws := state.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			term.ExitCode = 128 + int32(ws.Signal())
			term.Signal = int32(ws.Signal())
		} else {
			term.ExitCode = int32(ws.ExitStatus())
		}
		msg, _ := os.ReadFile(errFile)
		switch {
		case len(msg) > 0:
			term.Reason, term.Message = "StartError", string(msg)
		case term.ExitCode == 0:
			term.Reason = "Completed"
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL && ps.cg.oomKills()-ps.foreignOOMCount() > oomBefore:
			term.Reason = "OOMKilled"
		default:
			term.Reason = "Error"
		}
	}
	log.Printf("pod %s: container %s exited: code %d, %s", ps.key, name, term.ExitCode, term.Reason)
	p.update(ps, func(st *v1.PodStatus) { // runs under ps.mu: state and procs change together
		setContainerState(st, name, v1.ContainerState{Terminated: term})
		updateReadiness(st)
		delete(ps.procs, name)
	})
	return int(term.ExitCode)
}

// startContainer writes the pod-init spec and starts `node-agent pod-init SPEC` with its
// own mount and UTS namespaces, stdout+stderr to the container's log file.
func (p *provider) startContainer(ps *podState, pl containerPlan, env *envResolver, vols map[string]volumeSource) (*os.Process, string, error) {
	c := pl.c
	envList, err := env.containerEnv(ps.ctx, ps.pod, c, pl.imageEnv)
	if err != nil {
		return nil, "", err
	}
	mounts, err := containerMounts(c, vols)
	if err != nil {
		return nil, "", err
	}
	mounts = append(mounts,
		mountSpec{Source: filepath.Join(ps.dir, "hosts"), Target: "/etc/hosts"},
		mountSpec{Source: filepath.Join(ps.dir, "resolv.conf"), Target: "/etc/resolv.conf"},
		mountSpec{Source: filepath.Join(ps.dir, "hostname"), Target: "/etc/hostname"})
	// Without a workingDir, a container starts in its image's WORKDIR; these images have none, so
	// a directory of the container's own (not the agent's working directory, where a process
	// would leave its files among the project's).
	workingDir := c.WorkingDir
	if workingDir == "" {
		workingDir = filepath.Join(ps.dir, "work-dir", c.Name)
	}
	specPath := filepath.Join(ps.dir, "containers", c.Name+".json")
	errFile := filepath.Join(ps.dir, "containers", c.Name+".err")
	_ = os.Remove(errFile)
	spec := initSpec{
		MemoryCgroup: ps.cg.Memory, CPUCgroup: ps.cg.CPU,
		NetNS: ps.net.NetNSPath(), Hostname: podHostname(ps.pod),
		OverlayDir: filepath.Join(ps.dir, "overlay", c.Name),
		Mounts:     mounts, WorkingDir: workingDir,
		Argv: pl.argv, Env: envList, ErrFile: errFile,
	}
	if err := writeJSON(specPath, spec); err != nil {
		return nil, "", err
	}
	logPath := filepath.Join(ps.dir, "logs", c.Name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("open log file %s: %w", logPath, err)
	}
	defer logf.Close()

	cmd := exec.Command(p.self, "pod-init", specPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Setpgid:      true,
		Pdeathsig:    syscall.SIGKILL,
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.deleting {
		return nil, "", errDeleting
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s pod-init %s: %w", p.self, specPath, err)
	}
	ps.procs[c.Name] = cmd.Process
	return cmd.Process, errFile, nil
}
