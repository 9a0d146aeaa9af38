// env.go: a container's environment as a kubelet builds it: the image's env, then the
// Service env (KUBERNETES_SERVICE_HOST/PORT and, unless enableServiceLinks is false,
// Docker-link variables of the namespace's Services), then envFrom and env with the
// downward API, configMapKeyRef and secretKeyRef resolved here (virtual-kubelet's own
// resolution is switched off because it rejects status.podIP), and $(VAR) expanded.
package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

type envResolver struct {
	client      kubernetes.Interface
	services    corev1listers.ServiceLister
	allocatable v1.ResourceList // defaults for resourceFieldRef limits
	podIP       string
	hostIP      string
}

// containerEnv returns the final KEY=VALUE list (image env first; later entries win).
func (r *envResolver) containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, imageEnv []string) ([]string, error) {
	order := []string{}
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range imageEnv {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", defaultPath)
	}
	set("HOSTNAME", podHostname(pod))
	if _, ok := vals["HOME"]; !ok {
		set("HOME", "/root")
	}

	// Container env, resolved into its own map first ($(VAR) sees service env and earlier entries).
	cenv := map[string]string{}
	var corder []string
	cset := func(k, v string) {
		if _, ok := cenv[k]; !ok {
			corder = append(corder, k)
		}
		cenv[k] = v
	}
	for _, ef := range c.EnvFrom {
		data, err := r.envFromSource(ctx, pod.Namespace, ef)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cset(ef.Prefix+k, data[k])
		}
	}
	svcEnv := r.serviceEnv(pod)
	lookup := func(name string) (string, bool) {
		if v, ok := cenv[name]; ok {
			return v, true
		}
		v, ok := svcEnv[name]
		return v, ok
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			cset(e.Name, expandVars(e.Value, lookup))
			continue
		}
		v, ok, err := r.valueFrom(ctx, pod, c, e.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env %s of container %s: %w", e.Name, c.Name, err)
		}
		if ok {
			cset(e.Name, v)
		}
	}

	svcKeys := make([]string, 0, len(svcEnv))
	for k := range svcEnv {
		svcKeys = append(svcKeys, k)
	}
	sort.Strings(svcKeys)
	for _, k := range svcKeys {
		if _, ok := cenv[k]; !ok {
			set(k, svcEnv[k])
		}
	}
	for _, k := range corder {
		set(k, cenv[k])
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

func (r *envResolver) envFromSource(ctx context.Context, ns string, ef v1.EnvFromSource) (map[string]string, error) {
	var ref objectRef
	switch {
	case ef.ConfigMapRef != nil:
		ref = configMapRef(ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional)
	case ef.SecretRef != nil:
		ref = secretRef(ef.SecretRef.Name, ef.SecretRef.Optional)
	default:
		return map[string]string{}, nil
	}
	data, err := objectData(ctx, r.client, ns, ref, false)
	if err != nil {
		return nil, fmt.Errorf("envFrom: %w", err)
	}
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out, nil
}

// valueFrom resolves one env valueFrom; ok=false means "optional and absent: leave unset".
func (r *envResolver) valueFrom(ctx context.Context, pod *v1.Pod, c *v1.Container, vf *v1.EnvVarSource) (string, bool, error) {
	switch {
	case vf.FieldRef != nil:
		v, err := r.fieldRef(pod, vf.FieldRef.FieldPath)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := r.resourceFieldRef(pod, c, vf.ResourceFieldRef)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		return objectKey(ctx, r.client, pod.Namespace, configMapRef(ref.Name, ref.Optional), ref.Key)
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		return objectKey(ctx, r.client, pod.Namespace, secretRef(ref.Name, ref.Optional), ref.Key)
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// fieldRef resolves the downward API fields a kubelet supports for env and volumes.
func (r *envResolver) fieldRef(pod *v1.Pod, path string) (string, error) {
	if k, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return r.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return r.hostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceFieldRef: limits.* default to node allocatable when unset, as in the kubelet.
func (r *envResolver) resourceFieldRef(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	var q resource.Quantity
	var found bool
	switch kind {
	case "limits":
		q, found = target.Resources.Limits[v1.ResourceName(name)]
		if !found {
			q, found = r.allocatable[v1.ResourceName(name)]
		}
	case "requests":
		q, found = target.Resources.Requests[v1.ResourceName(name)]
	default:
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if !found {
		return "0", nil
	}
	if name == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// serviceEnv: the default/kubernetes Service always; the pod namespace's Services when
// enableServiceLinks is not false (the kubelet's rules).
func (r *envResolver) serviceEnv(pod *v1.Pod) map[string]string {
	env := map[string]string{}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var svcs []*v1.Service
	if r.services != nil {
		all, _ := r.services.List(labels.Everything())
		for _, s := range all {
			if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone {
				continue
			}
			if (s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes") || (links && s.Namespace == pod.Namespace) {
				svcs = append(svcs, s)
			}
		}
	}
	haveKube := false
	for _, s := range svcs {
		if s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes" {
			haveKube = true
		}
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	for _, s := range svcs {
		if s.Name == "kubernetes" && s.Namespace != metav1.NamespaceDefault && haveKube {
			continue // the master service wins, as in the kubelet
		}
		addServiceEnv(env, s)
	}
	if !haveKube {
		// Informer not synced yet (or no such Service): the well-known defaults.
		env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1"
		env["KUBERNETES_SERVICE_PORT"] = "443"
	}
	return env
}

func envName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// addServiceEnv writes the variables the kubelet derives from one Service.
func addServiceEnv(env map[string]string, s *v1.Service) {
	name := envName(s.Name)
	ip := s.Spec.ClusterIP
	env[name+"_SERVICE_HOST"] = ip
	if len(s.Spec.Ports) == 0 {
		return
	}
	first := s.Spec.Ports[0]
	env[name+"_SERVICE_PORT"] = strconv.Itoa(int(first.Port))
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			env[name+"_SERVICE_PORT_"+envName(p.Name)] = strconv.Itoa(int(p.Port))
		}
	}
	proto := strings.ToLower(string(first.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	env[name+"_PORT"] = fmt.Sprintf("%s://%s:%d", proto, ip, first.Port)
	for _, p := range s.Spec.Ports {
		pr := string(p.Protocol)
		if pr == "" {
			pr = "TCP"
		}
		base := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, strings.ToUpper(pr))
		env[base] = fmt.Sprintf("%s://%s:%d", strings.ToLower(pr), ip, p.Port)
		env[base+"_PROTO"] = strings.ToLower(pr)
		env[base+"_PORT"] = strconv.Itoa(int(p.Port))
		env[base+"_ADDR"] = ip
	}
}

// expandVars implements the $(VAR) syntax of env values: $(VAR) is replaced when VAR is
// defined, $$ is an escaped $, anything else is kept as written.
func expandVars(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
