// tokens.go: renewal of the service-account tokens in a pod's projected volumes, as the
// kubelet's token manager does: a token is requested again once 80% of its lifetime has
// passed, or 24 h after it was issued if that comes first (the apiserver extends the
// default 3607 s token of kube-api-access volumes to a year), and the file is replaced
// atomically, so that a reader sees the old token or the new one, never a torn file.
// Readers such as kube-rs and fabric8 re-read the file; the old token stays valid until
// its own expiry, so a reader that has not re-read it yet is not cut off.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// tokenRequester asks for a token of a service account (the TokenRequest API).
type tokenRequester func(ctx context.Context, namespace, serviceAccount string, spec authv1.TokenRequestSpec) (*authv1.TokenRequest, error)

func clientTokenRequester(client kubernetes.Interface) tokenRequester {
	return func(ctx context.Context, namespace, serviceAccount string, spec authv1.TokenRequestSpec) (*authv1.TokenRequest, error) {
		return client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount,
			&authv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	}
}

// tokenMaxAge is how long the kubelet uses a token at most, whatever its expiry.
const tokenMaxAge = 24 * time.Hour

// tokenRenewalRetry is the wait after a failed renewal; the old token is still valid then.
const tokenRenewalRetry = 10 * time.Second

// projectedToken is one serviceAccountToken source of a pod's projected volume.
type projectedToken struct {
	namespace, serviceAccount string
	spec                      authv1.TokenRequestSpec // the same request every time
	dir, path                 string                  // the volume's directory, the file in it
	mode                      os.FileMode

	renewAt time.Time
}

// renewTime is when a token issued at issued and expiring at expires is to be renewed:
// at 80% of its lifetime, and no later than tokenMaxAge after it was issued.
func renewTime(issued, expires time.Time) time.Time {
	at := issued.Add(expires.Sub(issued) * 8 / 10)
	if limit := issued.Add(tokenMaxAge); at.After(limit) {
		return limit
	}
	return at
}

// renew requests the token, replaces the file, and sets when to renew it next.
func (t *projectedToken) renew(ctx context.Context, request tokenRequester, now func() time.Time) error {
	issued := now()
	tr, err := request(ctx, t.namespace, t.serviceAccount, t.spec)
	if err != nil {
		return fmt.Errorf("TokenRequest for serviceaccount %s/%s: %w", t.namespace, t.serviceAccount, err)
	}
	if err := replaceVolumeFile(t.dir, t.path, []byte(tr.Status.Token), t.mode); err != nil {
		return err
	}
	t.renewAt = renewTime(issued, tr.Status.ExpirationTimestamp.Time)
	return nil
}

// renewTokens renews each token when it is due, until ctx is done (the pod's containers
// have ended or it is being deleted). Logs every renewal, never the token.
func renewTokens(ctx context.Context, pod string, tokens []*projectedToken, request tokenRequester) {
	if len(tokens) == 0 {
		return
	}
	for {
		next := tokens[0]
		for _, t := range tokens[1:] {
			if t.renewAt.Before(next.renewAt) {
				next = t
			}
		}
		timer := time.NewTimer(time.Until(next.renewAt))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if err := next.renew(ctx, request, time.Now); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Printf("pod %s: renewing token %s: %v; retrying in %s", pod, next.path, err, tokenRenewalRetry)
			next.renewAt = time.Now().Add(tokenRenewalRetry)
			continue
		}
		log.Printf("pod %s: token %s of serviceaccount %s renewed; next renewal at %s",
			pod, next.path, next.serviceAccount, next.renewAt.Format(time.RFC3339))
	}
}

// replaceVolumeFile writes the file under a temporary name in the same directory and
// renames it over the old one (atomic: the container's bind mount of the directory shows
// either file whole).
func replaceVolumeFile(dir, rel string, data []byte, mode os.FileMode) error {
	clean := filepath.Clean("/" + rel)
	if strings.Contains(rel, "..") || clean == "/" {
		return fmt.Errorf("invalid volume file path %q", rel)
	}
	tmpRel := filepath.Join(filepath.Dir(clean), "."+filepath.Base(clean)+".renewing")
	if err := writeVolumeFile(dir, tmpRel, data, mode); err != nil {
		return err
	}
	tmp := filepath.Join(dir, tmpRel)
	final := filepath.Join(dir, clean)
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, final, err)
	}
	return nil
}
