// volumes.go: the pod's volumes, materialised as directories in the pod's state dir
// (STATE/pods/<uid>/volumes/<name>) that pod-init bind-mounts into each container:
// emptyDir, configMap, secret, downwardAPI, projected (serviceAccountToken via the
// TokenRequest API, configMap, secret, downwardAPI) and hostPath. Contents are written
// once at pod start; only service-account tokens are renewed after that (tokens.go), as
// the kubelet renews them; configMaps and secrets are not refreshed.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

type volumeBuilder struct {
	client       kubernetes.Interface
	requestToken tokenRequester // the TokenRequest API (tests stub it)
	env          *envResolver   // for downward API items
	dir          string         // STATE/pods/<uid>/volumes
	// tokens are the service-account tokens the last prepare wrote, to be renewed.
	tokens []*projectedToken
}

// prepare writes every volume of the pod and returns volume name -> host source path.
func (b *volumeBuilder) prepare(ctx context.Context, pod *v1.Pod) (map[string]volumeSource, error) {
	out := map[string]volumeSource{}
	b.tokens = nil // a retried prepare writes every token again
	for _, vol := range pod.Spec.Volumes {
		src, err := b.prepareOne(ctx, pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		out[vol.Name] = src
	}
	return out, nil
}

type volumeSource struct {
	Path     string
	ReadOnly bool // content volumes are mounted read-only, as by the kubelet
}

func (b *volumeBuilder) prepareOne(ctx context.Context, pod *v1.Pod, vol v1.Volume) (volumeSource, error) {
	dir := filepath.Join(b.dir, vol.Name)
	switch {
	case vol.HostPath != nil:
		return volumeSource{Path: vol.HostPath.Path}, nil
	case vol.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return volumeSource{}, fmt.Errorf("mkdir %s: %w", dir, err)
		}
		return volumeSource{Path: dir}, os.Chmod(dir, 0o777)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return volumeSource{}, fmt.Errorf("mkdir %s: %w", dir, err)
	}
	var err error
	switch {
	case vol.ConfigMap != nil:
		err = b.objectKeys(ctx, pod.Namespace, dir, configMapRef(vol.ConfigMap.Name, vol.ConfigMap.Optional), vol.ConfigMap.Items, vol.ConfigMap.DefaultMode)
	case vol.Secret != nil:
		err = b.objectKeys(ctx, pod.Namespace, dir, secretRef(vol.Secret.SecretName, vol.Secret.Optional), vol.Secret.Items, vol.Secret.DefaultMode)
	case vol.DownwardAPI != nil:
		err = b.downwardAPI(pod, dir, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode)
	case vol.Projected != nil:
		err = b.projected(ctx, pod, dir, vol.Projected)
	default:
		err = fmt.Errorf("unsupported volume type (supported: emptyDir, configMap, secret, downwardAPI, projected, hostPath)")
	}
	return volumeSource{Path: dir, ReadOnly: true}, err
}

// objectKeys writes a ConfigMap's or Secret's keys (items, or every key) into dir.
func (b *volumeBuilder) objectKeys(ctx context.Context, ns, dir string, ref objectRef, items []v1.KeyToPath, mode *int32) error {
	data, err := objectData(ctx, b.client, ns, ref, true)
	if err != nil || data == nil {
		return err
	}
	return writeKeys(dir, data, items, mode, ref.isOptional())
}

func (b *volumeBuilder) downwardAPI(pod *v1.Pod, dir string, items []v1.DownwardAPIVolumeFile, mode *int32) error {
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = b.env.fieldRef(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := &pod.Spec.Containers[0]
			val, err = b.env.resourceFieldRef(pod, c, it.ResourceFieldRef)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI item %s: %w", it.Path, err)
		}
		if err := writeVolumeFile(dir, it.Path, []byte(val), fileMode(it.Mode, mode)); err != nil {
			return err
		}
	}
	return nil
}

func (b *volumeBuilder) projected(ctx context.Context, pod *v1.Pod, dir string, p *v1.ProjectedVolumeSource) error {
	for _, src := range p.Sources {
		var err error
		switch {
		case src.ServiceAccountToken != nil:
			err = b.token(ctx, pod, dir, src.ServiceAccountToken, p.DefaultMode)
		case src.ConfigMap != nil:
			err = b.objectKeys(ctx, pod.Namespace, dir, configMapRef(src.ConfigMap.Name, src.ConfigMap.Optional), src.ConfigMap.Items, p.DefaultMode)
		case src.Secret != nil:
			err = b.objectKeys(ctx, pod.Namespace, dir, secretRef(src.Secret.Name, src.Secret.Optional), src.Secret.Items, p.DefaultMode)
		case src.DownwardAPI != nil:
			err = b.downwardAPI(pod, dir, src.DownwardAPI.Items, p.DefaultMode)
		default:
			err = fmt.Errorf("unsupported projected source (supported: serviceAccountToken, configMap, secret, downwardAPI)")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// token asks the TokenRequest API for a token bound to the pod, writes it, and keeps it
// in b.tokens for renewal.
func (b *volumeBuilder) token(ctx context.Context, pod *v1.Pod, dir string, t *v1.ServiceAccountTokenProjection, mode *int32) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	spec := authv1.TokenRequestSpec{
		ExpirationSeconds: t.ExpirationSeconds,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}
	if t.Audience != "" {
		spec.Audiences = []string{t.Audience}
	}
	request := b.requestToken
	if request == nil {
		request = clientTokenRequester(b.client)
	}
	tok := &projectedToken{
		namespace: pod.Namespace, serviceAccount: sa, spec: spec,
		dir: dir, path: t.Path, mode: fileMode(nil, mode),
	}
	if err := tok.renew(ctx, request, time.Now); err != nil {
		return err
	}
	b.tokens = append(b.tokens, tok)
	return nil
}

// writeKeys writes all keys, or only `items` (key -> path, with per-item mode) when given.
func writeKeys(dir string, data map[string][]byte, items []v1.KeyToPath, mode *int32, optional bool) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := writeVolumeFile(dir, k, v, fileMode(nil, mode)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("key %q not found", it.Key)
		}
		if err := writeVolumeFile(dir, it.Path, v, fileMode(it.Mode, mode)); err != nil {
			return err
		}
	}
	return nil
}

func fileMode(item, def *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item)
	case def != nil:
		return os.FileMode(*def)
	}
	return 0o644
}

func writeVolumeFile(dir, rel string, data []byte, mode os.FileMode) error {
	clean := filepath.Clean("/" + rel)
	if strings.Contains(rel, "..") || clean == "/" {
		return fmt.Errorf("invalid volume file path %q", rel)
	}
	p := filepath.Join(dir, clean)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", filepath.Dir(p), err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return os.Chmod(p, mode)
}

// containerMounts turns a container's volumeMounts into pod-init mounts (subPath supported).
func containerMounts(c *v1.Container, vols map[string]volumeSource) ([]mountSpec, error) {
	var out []mountSpec
	for _, vm := range c.VolumeMounts {
		src, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: volumeMount %q names no volume of the pod", c.Name, vm.Name)
		}
		path := src.Path
		if vm.SubPath != "" {
			if strings.Contains(vm.SubPath, "..") {
				return nil, fmt.Errorf("container %s: invalid subPath %q", c.Name, vm.SubPath)
			}
			path = filepath.Join(path, vm.SubPath)
			if _, err := os.Stat(path); os.IsNotExist(err) {
				if err := os.MkdirAll(path, 0o755); err != nil {
					return nil, fmt.Errorf("mkdir subPath %s: %w", path, err)
				}
			}
		}
		out = append(out, mountSpec{Source: path, Target: vm.MountPath, ReadOnly: vm.ReadOnly || src.ReadOnly})
	}
	return out, nil
}
