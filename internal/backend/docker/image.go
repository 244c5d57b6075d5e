package docker

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/image"

	"github.com/paddockhq/paddock/internal/backend"
)

// mirror is the Debian mirror the image is built from.
const mirror = "http://deb.debian.org/debian"

var _ backend.ImageBuilder = (*Docker)(nil)

var (
	basePackages = []string{"bash", "git", "tmux", "curl", "ca-certificates", "sudo", "procps", "python3-minimal", "diffutils", "less"}
	fullPackages = []string{"direnv", "ripgrep", "python3", "nodejs", "npm", "build-essential", "openssh-client", "unzip"}
)

// imageKeyLabel records what an image was built from, so that a rebuild with nothing
// changed is skipped.
const imageKeyLabel = "dev.paddock.image.key"

// BuildImage makes the sandbox image with no registry: a Debian root filesystem made by
// mmdebstrap (with the user agent, uid 1000, owning /workspace), imported into the
// engine. A build whose inputs match the existing image's is skipped.
func (d *Docker) BuildImage(ctx context.Context, opts backend.ImageSpec, progress func(string)) (string, error) {
	if opts.Tag == "" {
		opts.Tag = d.image
	}
	pkgs := append([]string(nil), basePackages...)
	if !opts.Minimal {
		pkgs = append(pkgs, fullPackages...)
	}
	npm := append([]string(nil), opts.NPM...)
	if opts.Node && opts.Minimal {
		pkgs = append(pkgs, "nodejs")
	}

	sort.Strings(pkgs)
	sort.Strings(npm)
	sum := sha256.Sum256([]byte("bookworm|" + strings.Join(pkgs, ",") + "|" + strings.Join(npm, ",")))
	key := hex.EncodeToString(sum[:8])
	if img, err := d.cli.ImageInspect(ctx, opts.Tag); err == nil && img.Config != nil && img.Config.Labels[imageKeyLabel] == key {
		progress(fmt.Sprintf("%s is up to date (%s)", opts.Tag, key))
		return opts.Tag, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", fmt.Errorf("mmdebstrap is not installed: sudo apt-get install mmdebstrap")
	}
	if opts.CacheDir == "" {
		opts.CacheDir = os.TempDir()
	}
	if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
		return "", err
	}
	tarball := filepath.Join(opts.CacheDir, "rootfs-"+key+".tar")
	defer os.Remove(tarball)
	hooks := []string{
		`chroot "$1" useradd -m -u 1000 -s /bin/bash agent`,
		`echo 'agent ALL=(ALL) NOPASSWD:ALL' > "$1"/etc/sudoers.d/agent`,
		`mkdir -p "$1"/workspace && chown 1000:1000 "$1"/workspace`,
	}
	if len(npm) > 0 {
		// The host's npm installs into the image's /usr/local: Debian's npm in the image is
		// too old for the agent CLIs, whose commands are native binaries that need no node.
		if _, err := exec.LookPath("npm"); err != nil {
			return "", fmt.Errorf("npm is not installed on the host, and it installs the agent CLIs into the image: sudo apt-get install npm")
		}
		hooks = append(hooks, `npm install -g --prefix "$1"/usr/local --no-fund --no-audit `+strings.Join(npm, " "))
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(pkgs, ",")}
	for _, h := range hooks {
		args = append(args, "--customize-hook="+h)
	}
	args = append(args, "bookworm", tarball, mirror)
	progress(fmt.Sprintf("building a Debian root filesystem with mmdebstrap (%d packages%s)", len(pkgs), agentsNote(npm)))
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("mmdebstrap: %w", err)
	}
	var lastLines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		lastLines = append(lastLines, line)
		if len(lastLines) > 20 {
			lastLines = lastLines[1:]
		}
		if strings.HasPrefix(line, "I: ") {
			progress(strings.TrimPrefix(line, "I: "))
		}
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("mmdebstrap: %w: %s", err, strings.Join(lastLines, "\n"))
	}
	progress("importing the root filesystem into the engine as " + opts.Tag)
	f, err := os.Open(tarball)
	if err != nil {
		return "", err
	}
	defer f.Close()
	rc, err := d.cli.ImageImport(ctx, image.ImportSource{Source: f, SourceName: "-"}, opts.Tag, image.ImportOptions{
		Changes: []string{"LABEL " + imageKeyLabel + "=" + key, "USER 1000:1000", "WORKDIR /workspace", `CMD ["/bin/bash"]`},
	})
	if err != nil {
		return "", fmt.Errorf("import the image: %w", err)
	}
	defer rc.Close()
	if _, err := drainProgress(rc); err != nil {
		return "", err
	}
	progress(opts.Tag + " is built")
	return opts.Tag, nil
}

func agentsNote(npm []string) string {
	if len(npm) == 0 {
		return ""
	}
	return ", and " + strings.Join(npm, ", ") + " from npm"
}

// drainProgress drains the engine's JSON progress stream and returns its first error message.
func drainProgress(r interface{ Read([]byte) (int, error) }) (int64, error) {
	sc := bufio.NewScanner(r)
	var n int64
	for sc.Scan() {
		n += int64(len(sc.Bytes()))
		if strings.Contains(sc.Text(), `"error"`) {
			return n, fmt.Errorf("the engine refused the image: %s", sc.Text())
		}
	}
	return n, sc.Err()
}
