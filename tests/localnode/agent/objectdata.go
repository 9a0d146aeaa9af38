// objectdata.go: the data of the ConfigMaps and Secrets a pod refers to, read as a kubelet
// reads it for env, envFrom and volumes: a reference marked optional to an object or key
// that cannot be read is no error.
package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// objectRef names a ConfigMap or a Secret of the pod's namespace.
type objectRef struct {
	kind     string // "configMap" or "secret"
	name     string
	optional *bool
}

func configMapRef(name string, optional *bool) objectRef {
	return objectRef{kind: "configMap", name: name, optional: optional}
}

func secretRef(name string, optional *bool) objectRef {
	return objectRef{kind: "secret", name: name, optional: optional}
}

func (o objectRef) isOptional() bool { return o.optional != nil && *o.optional }

// objectData reads the object's data: nil and no error when an optional object cannot be
// read. A ConfigMap's binaryData comes too only with withBinary: volumes project it, env
// takes only data, as the kubelet does.
func objectData(ctx context.Context, client kubernetes.Interface, ns string, o objectRef, withBinary bool) (map[string][]byte, error) {
	data := map[string][]byte{}
	var err error
	if o.kind == "configMap" {
		cm, getErr := client.CoreV1().ConfigMaps(ns).Get(ctx, o.name, metav1.GetOptions{})
		if err = getErr; err == nil {
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			if withBinary {
				for k, v := range cm.BinaryData {
					data[k] = v
				}
			}
		}
	} else {
		s, getErr := client.CoreV1().Secrets(ns).Get(ctx, o.name, metav1.GetOptions{})
		if err = getErr; err == nil {
			data = s.Data
		}
	}
	if err != nil {
		if o.isOptional() {
			return nil, nil
		}
		return nil, fmt.Errorf("%s %s/%s: %w", o.kind, ns, o.name, err)
	}
	return data, nil
}

// objectKey reads one key of the object's data; ok=false when the reference is optional
// and the object or the key is absent.
func objectKey(ctx context.Context, client kubernetes.Interface, ns string, o objectRef, key string) (value string, ok bool, err error) {
	data, err := objectData(ctx, client, ns, o, false)
	if err != nil {
		return "", false, err
	}
	if v, found := data[key]; found {
		return string(v), true, nil
	}
	if o.isOptional() {
		return "", false, nil
	}
	return "", false, fmt.Errorf("%s %s has no key %q", o.kind, o.name, key)
}
