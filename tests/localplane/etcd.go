package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// embeddedEtcd runs etcd inside this process, so that it keeps its data while
// the apiserver is restarted, and so that tests can compact it to force 410 Gone.
type embeddedEtcd struct {
	server   *embed.Etcd
	endpoint string
}

func startEtcd(dir string) (*embeddedEtcd, error) {
	clientPort, peerPort := freePort(), freePort()
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
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after 60s")
	}
	return &embeddedEtcd{server: e, endpoint: client.String()}, nil
}

// compact compacts etcd to its current revision: every watch that resumes from
// an older resourceVersion (and is not served from the apiserver's watch
// cache) then gets 410 Gone.
func (e *embeddedEtcd) compact() (int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/localplane/compaction-probe")
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}

func (e *embeddedEtcd) close() { e.server.Close() }
