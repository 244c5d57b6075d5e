package kubernetes

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/docker/docker/client"

	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.ImageLoader = (*Kubernetes)(nil)

// LoadImage implements backend.ImageLoader: the image, from the host's Docker engine
// (where `paddock image build` makes it), is imported into the node's containerd, where
// pods find it with no registry (imagePullPolicy Never). This is for a single-node
// cluster whose containerd is on this host (containerd_socket); for others, push the
// image to a registry and use --image REGISTRY/IMAGE.
func (k *Kubernetes) LoadImage(ctx context.Context, ref string, progress func(string)) error {
	if ref == "" {
		ref = k.settings.Image
	}
	ctrBin, err := exec.LookPath("ctr")
	if err != nil {
		return fmt.Errorf("loading an image into the node's containerd needs ctr (apt-get install containerd), or push %s to a registry and use --image REGISTRY/IMAGE", ref)
	}
	if _, err := os.Stat(k.settings.ContainerdSocket); err != nil {
		return fmt.Errorf("no containerd socket at %s (containerd_socket in [backends.kubernetes]): loading works on a single-node cluster whose containerd runs here; else push %s to a registry and use --image REGISTRY/IMAGE", k.settings.ContainerdSocket, ref)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("no image %s in the Docker engine here: build it with `paddock image build` (or docker build -t %s .)", ref, ref)
	}
	progress(fmt.Sprintf("saving %s from Docker", ref))
	saved, err := cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("save %s: %w", ref, err)
	}
	defer saved.Close()
	progress(fmt.Sprintf("importing it into the node's containerd (%s, namespace %s)", k.settings.ContainerdSocket, k.settings.ContainerdNamespace))
	cmd := exec.CommandContext(ctx, ctrBin, "--address", k.settings.ContainerdSocket, "--namespace", k.settings.ContainerdNamespace,
		"images", "import", "-")
	cmd.Stdin = saved
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ctr images import: %v: %s", err, strings.TrimSpace(out.String()))
	}
	io.Copy(io.Discard, saved)
	progress(fmt.Sprintf("loaded %s: pods use it with imagePullPolicy Never", ref))
	return nil
}
