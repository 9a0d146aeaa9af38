package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// What the informer tests rely on: after Compact, reading at a revision before it
// fails as compacted (the apiserver turns that into 410 Gone).
func TestCompactMakesEarlierRevisionsUnreadable(t *testing.T) {
	e, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := cli.Put(ctx, "/pods/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/pods/a", "2"); err != nil {
		t.Fatal(err)
	}
	rev, err := e.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if rev <= first.Header.Revision {
		t.Fatalf("compacted at %d, not after the first write's %d", rev, first.Header.Revision)
	}
	_, err = cli.Get(ctx, "/pods/a", clientv3.WithRev(first.Header.Revision))
	if !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("a read at the old revision: want compacted, got %v", err)
	}
}
