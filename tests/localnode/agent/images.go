// images.go: the image table (--images FILE) that stands in for container images.
// Format: {"images": {"<image name>": {"entrypoint": ["/abs/path", "arg", ...], "env": {"K": "V"}}}}.
// The implicit image "local/host" runs container.command (+ args) as is.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	v1 "k8s.io/api/core/v1"
)

const hostImage = "local/host"

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type imageEntry struct {
	Entrypoint []string          `json:"entrypoint"`
	Env        map[string]string `json:"env"`
}

type imageTable struct {
	Images map[string]imageEntry `json:"images"`
}

// errImageNotFound is reported as waiting{reason: ErrImagePull}.
type errImageNotFound struct{ msg string }

func (e *errImageNotFound) Error() string { return e.msg }

// loadImages reads the table; it is re-read for every pod so tests can edit it.
func loadImages(path string) (*imageTable, error) {
	t := &imageTable{Images: map[string]imageEntry{}}
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read image table %s: %w", path, err)
	}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("parse image table %s: %w", path, err)
	}
	return t, nil
}

// resolveCommand returns argv and the image's env (sorted KEY=VALUE) for a container:
// entrypoint + args when command is empty, else command + args.
func resolveCommand(t *imageTable, tablePath string, c *v1.Container) ([]string, []string, error) {
	if c.Image == hostImage {
		if len(c.Command) == 0 {
			return nil, nil, fmt.Errorf("container %q: image %s needs a command", c.Name, hostImage)
		}
		return append(append([]string{}, c.Command...), c.Args...), nil, nil
	}
	img, ok := t.Images[c.Image]
	if !ok {
		return nil, nil, &errImageNotFound{fmt.Sprintf("image %q is not in the image table %s (and is not %s)", c.Image, tablePath, hostImage)}
	}
	var argv []string
	if len(c.Command) > 0 {
		argv = append(append([]string{}, c.Command...), c.Args...)
	} else {
		argv = append(append([]string{}, img.Entrypoint...), c.Args...)
	}
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("container %q: image %q has no entrypoint and the container no command", c.Name, c.Image)
	}
	var env []string
	for k, v := range img.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return argv, env, nil
}
