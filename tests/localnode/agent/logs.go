// logs.go: `kubectl logs` support (GetContainerLogs, served by nodeutil's kubelet API)
// from the container's log file STATE/pods/<uid>/logs/<container>.log, with tailLines,
// limitBytes and follow. Also the remaining nodeutil.Provider methods, which this node
// does not support (exec, attach, port-forward, stats).
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func (p *provider) GetContainerLogs(ctx context.Context, ns, name, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	ps := p.get(ns, name)
	if ps == nil {
		return nil, errdefs.NotFoundf("pod %s/%s not found on this node", ns, name)
	}
	if container == "" && len(ps.pod.Spec.Containers) > 0 {
		container = ps.pod.Spec.Containers[0].Name
	}
	path := filepath.Join(ps.dir, "logs", container+".log")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return io.NopCloser(bytes.NewReader(nil)), nil // not started yet
	}
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if opts.Tail > 0 {
		off, err := tailOffset(f, opts.Tail)
		if err != nil {
			f.Close()
			return nil, err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("seek log %s: %w", path, err)
		}
	}
	var r io.Reader = f
	if opts.Follow {
		r = &followReader{ctx: ctx, f: f, running: func() bool {
			ps.mu.Lock()
			defer ps.mu.Unlock()
			_, ok := ps.procs[container]
			return ok
		}}
	}
	if opts.LimitBytes > 0 {
		r = io.LimitReader(r, int64(opts.LimitBytes))
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// tailOffset finds where the last n lines of f start.
func tailOffset(f *os.File, n int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat log: %w", err)
	}
	size := fi.Size()
	buf := make([]byte, 64*1024)
	pos := size
	lines := 0
	// A final newline ends the last line; it does not start a new one.
	skipLast := true
	for pos > 0 {
		chunk := int64(len(buf))
		if chunk > pos {
			chunk = pos
		}
		pos -= chunk
		if _, err := f.ReadAt(buf[:chunk], pos); err != nil && err != io.EOF {
			return 0, fmt.Errorf("read log: %w", err)
		}
		for i := chunk - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				continue
			}
			if skipLast && pos+i == size-1 {
				continue
			}
			lines++
			if lines == n {
				return pos + i + 1, nil
			}
		}
		skipLast = false
	}
	return 0, nil
}

// followReader keeps reading a growing file until the container has exited and
// everything is read, or the request goes away.
type followReader struct {
	ctx     context.Context
	f       *os.File
	running func() bool
}

func (r *followReader) Read(b []byte) (int, error) {
	for {
		n, err := r.f.Read(b)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if !r.running() {
			// One more read: the process may have written just before exiting.
			n, err := r.f.Read(b)
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		select {
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *provider) RunInContainer(context.Context, string, string, string, []string, api.AttachIO) error {
	return errdefs.InvalidInput("exec is not supported by node-agent")
}

func (p *provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by node-agent")
}

func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errdefs.InvalidInput("stats are not supported by node-agent")
}

func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errdefs.InvalidInput("metrics are not supported by node-agent")
}

func (p *provider) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errdefs.InvalidInput("port-forward is not supported by node-agent")
}
