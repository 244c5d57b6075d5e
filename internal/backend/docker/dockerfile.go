package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/build"

	"github.com/paddockhq/paddock/internal/archive"
	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.DockerfileBuilder = (*Docker)(nil)

// BuildDockerfile builds an image through the Engine API from a context directory sent as
// a tar stream (symlinks as links, never followed).
func (d *Docker) BuildDockerfile(ctx context.Context, contextDir, dockerfile, tag string, progress func(string)) error {
	rel, err := filepath.Rel(contextDir, dockerfile)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("the Dockerfile %s is outside its build context %s", dockerfile, contextDir)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(archive.Pack(pw, contextDir, "")) }()
	resp, err := d.cli.ImageBuild(ctx, pr, build.ImageBuildOptions{Tags: []string{tag}, Dockerfile: filepath.ToSlash(rel), Remove: true})
	if err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("build %s: %w", dockerfile, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		if msg.Error != "" {
			return fmt.Errorf("build %s: %s", dockerfile, msg.Error)
		}
		if s := strings.TrimSpace(msg.Stream); strings.HasPrefix(s, "Step ") {
			progress(s)
		}
	}
	return sc.Err()
}
