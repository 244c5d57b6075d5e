package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
)

func newCmdImage(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Sandbox images, built locally with no registry, and loaded into a cluster's nodes"}
	var req wire.ImageBuildRequest
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the default sandbox image (Debian, with the agent CLIs you ask for)",
		Long: `Build the docker backend's sandbox image locally: a Debian root filesystem made by mmdebstrap
(bash, git, tmux, curl, ca-certificates, sudo, direnv, ripgrep, python3, nodejs and npm,
build-essential; the user agent, uid 1000, owning /workspace), with the agent CLIs you name installed
from npm, imported into the engine. A second build with nothing changed is skipped.

With --format microvm, the microvm backend's form of the image is made too, as its first sandbox
would make it: the kernel unpacked and the image's ext4 root file system.

  paddock image build --agents claude,codex
  paddock image build --format microvm`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Dockerfile != "" {
				if req.Tag == "" {
					return usagef("--dockerfile needs --tag NAME for the image")
				}
				abs, err := filepath.Abs(req.Dockerfile)
				if err != nil {
					return err
				}
				req.Dockerfile = abs
				if req.Context == "" {
					req.Context = filepath.Dir(abs)
				}
				if req.Context, err = filepath.Abs(req.Context); err != nil {
					return err
				}
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			tag, err := c.BuildImage(cmd.Context(), req, func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
			if err != nil {
				return err
			}
			fmt.Fprintln(f.IO.Out, tag)
			return nil
		},
	}
	build.Flags().StringSliceVar(&req.Agents, "agents", nil, "agent CLIs to install from npm: claude, codex, gemini")
	build.Flags().BoolVar(&req.Minimal, "minimal", false, "leave out compilers and project tools (for tests)")
	build.Flags().StringVar(&req.Tag, "tag", "", "the image's name (default paddock/sandbox:latest)")
	build.Flags().StringVar(&req.Dockerfile, "dockerfile", "", "build this Dockerfile through the Engine API instead (use the image with 'paddock up --image TAG')")
	build.Flags().StringVar(&req.Format, "format", "", "also make the image a backend boots in a form of its own: microvm (a kernel and an ext4 root file system)")
	build.Flags().StringVar(&req.Context, "context", "", "with --dockerfile: the build context (default: the Dockerfile's directory)")
	var load wire.ImageLoadRequest
	loadCmd := &cobra.Command{
		Use:   "load [IMAGE] --backend kubernetes",
		Short: "Load a local image (default paddock/sandbox:latest) into the nodes of a single-node cluster",
		Long: `Copy an image from the host's Docker engine (where ` + "`paddock image build`" + ` makes it) into the
containerd of a single-node Kubernetes cluster running here ([backends.kubernetes] containerd_socket),
with no registry: pods then run it with imagePullPolicy Never. For a cluster of several nodes, push
the image to a registry instead and use ` + "`up --image REGISTRY/IMAGE`" + `.

  paddock image build --agents claude && paddock image load --backend kubernetes`,
		Args: maxArgs(1, "at most one image"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				load.Image = args[0]
			}
			if load.Backend == "" {
				return usagef("name the backend to load the image for: --backend kubernetes")
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			return c.LoadImage(cmd.Context(), load, func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
		},
	}
	loadCmd.Flags().StringVar(&load.Backend, "backend", "", "the backend whose nodes get the image: kubernetes")
	cmd.AddCommand(build, loadCmd)
	return cmd
}
