// Package etcd runs etcd inside the launcher's process.
package etcd

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"spark-k8s-native/localplane/internal/process"
)

// Embedded is etcd run inside this process, so that it keeps its data while
// the apiserver is restarted, and so that tests can compact it to force 410 Gone.
type Embedded struct {
	server *embed.Etcd
	// Endpoint is its client URL (http://127.0.0.1:PORT).
	Endpoint string
}

// Start runs etcd with its data in dir/etcd, and waits until it is ready.
func Start(dir string) (*Embedded, error) {
	clientPort, err := process.FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := process.FreePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "localplane"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.LogLevel = "error"
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Tests create thousands of pods; the default 2 GiB quota is plenty, but
	// fsync on every write is not needed for a throwaway plane.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after 60s")
	}
	return &Embedded{server: e, Endpoint: client.String()}, nil
}

// Compact compacts etcd to its current revision: every watch that resumes from
// an older resourceVersion (and is not served from the apiserver's watch
// cache) then gets 410 Gone.
func (e *Embedded) Compact() (int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("etcd client of %s: %w", e.Endpoint, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/localplane/compaction-probe")
	if err != nil {
		return 0, fmt.Errorf("read etcd's revision: %w", err)
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compact etcd at revision %d: %w", rev, err)
	}
	return rev, nil
}

// Close stops etcd.
func (e *Embedded) Close() { e.server.Close() }
