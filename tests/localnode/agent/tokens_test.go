package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestATokenIsRenewedAtEightyPercentOfItsLifetimeAndWithinADay(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		lifetime, renewAfter time.Duration
	}{
		{10 * time.Minute, 8 * time.Minute}, // the apiserver's shortest token
		{3607 * time.Second, 2885600 * time.Millisecond},
		{365 * 24 * time.Hour, 24 * time.Hour}, // an extended kube-api-access token
	} {
		if got := renewTime(issued, issued.Add(c.lifetime)).Sub(issued); got != c.renewAfter {
			t.Errorf("a token of %s: renewed after %s, want %s", c.lifetime, got, c.renewAfter)
		}
	}
}

// fakeTokenAPI issues token-1, token-2, ... each valid for lifetime, and records the requests.
type fakeTokenAPI struct {
	lifetime time.Duration
	mu       sync.Mutex
	requests []tokenRequestSeen
}

type tokenRequestSeen struct {
	namespace, serviceAccount string
	spec                      authv1.TokenRequestSpec
}

func (f *fakeTokenAPI) request(_ context.Context, namespace, serviceAccount string, spec authv1.TokenRequestSpec) (*authv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, tokenRequestSeen{namespace, serviceAccount, spec})
	return &authv1.TokenRequest{Status: authv1.TokenRequestStatus{
		Token:               fmt.Sprintf("token-%d", len(f.requests)),
		ExpirationTimestamp: metav1.NewTime(time.Now().Add(f.lifetime)),
	}}, nil
}

func (f *fakeTokenAPI) seen() []tokenRequestSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tokenRequestSeen{}, f.requests...)
}

func podWithTokenVolume() *v1.Pod {
	expiration := int64(600)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "spark", Name: "driver", UID: "uid-1"},
		Spec: v1.PodSpec{
			ServiceAccountName: "spark-driver",
			Volumes: []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{
					Path: "token", ExpirationSeconds: &expiration, Audience: "api",
				}}},
			}}}},
		},
	}
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

// A token lives 500 ms here (the apiserver's minimum is 10 minutes): renewed every 400 ms.
func TestAPodsProjectedTokenIsRenewedWithTheSameRequestUntilThePodEnds(t *testing.T) {
	api := &fakeTokenAPI{lifetime: 500 * time.Millisecond}
	vb := &volumeBuilder{requestToken: api.request, dir: t.TempDir()}
	vols, err := vb.prepare(context.Background(), podWithTokenVolume())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(vols["kube-api-access"].Path, "token")
	if got := readToken(t, path); got != "token-1" {
		t.Fatalf("the token written at pod start: %q", got)
	}

	ctx, podEnded := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	began := time.Now()
	go func() {
		renewTokens(ctx, "spark/driver", vb.tokens, api.request)
		close(stopped)
	}()
	for readToken(t, path) != "token-3" {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("after 5 s the file holds %q, want token-3 (renewed twice)", readToken(t, path))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if elapsed := time.Since(began); elapsed < 700*time.Millisecond {
		t.Errorf("renewed twice %s after the start: before 80%% of each lifetime", elapsed)
	}
	podEnded()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("renewal goes on after the pod ended")
	}
	count := len(api.seen())
	time.Sleep(600 * time.Millisecond)
	if after := len(api.seen()); after != count {
		t.Errorf("%d token requests after the pod ended", after-count)
	}

	for i, r := range api.seen() {
		ref := r.spec.BoundObjectRef
		if r.namespace != "spark" || r.serviceAccount != "spark-driver" || ref == nil ||
			ref.Kind != "Pod" || ref.Name != "driver" || ref.UID != "uid-1" ||
			*r.spec.ExpirationSeconds != 600 || len(r.spec.Audiences) != 1 || r.spec.Audiences[0] != "api" {
			t.Errorf("request %d is not the pod's own: %+v", i+1, r)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the volume holds %d files, want only the token (no temporary file left)", len(entries))
	}
}
