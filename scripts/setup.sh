#!/usr/bin/env bash
# Installs what paddock's tests need on a fresh Debian machine, then builds paddock.
# Debian's packages come first (one apt-get); then the slow steps run side by side, each
# line of their output prefixed with the step's name: the agent CLIs (npm), the web UI's
# packages, paddock and the sandbox image, MinIO (built from source) and the Kubernetes
# binaries (built from source). What they build is kept (~/.cache, GOPATH/bin,
# web/node_modules), so a second run redoes none of it. A step that fails fails setup,
# after the others have finished, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the web UI's browser tests (internal/webui) drive it headless. ripgrep:
# OpenCode's search tools, which would download it from GitHub otherwise. vagrant: the
# vagrant backend's tests, with its docker provider (no VirtualBox here). openssh-client:
# paddock ssh, and the tests that drive OpenSSH through it. openssh-server: its
# sftp-server, which scp and sftp reach inside a bwrap sandbox, and the sshd the sync
# benchmark's baseline fetches from; with iproute2, the ssh backend's tests run their own
# sshd (never the system's service) in a network namespace of its own, as the remote host.
# qemu-system-x86, linux-image-amd64, e2fsprogs and xz-utils: the microvm backend's VMs
# (QEMU's microvm machine, Debian's kernel and its modules, the disks made with mke2fs -d,
# the kernel unpacked once with xz).
need=(bubblewrap git tmux curl ca-certificates procps python3 busybox-static docker.io mmdebstrap runsc chromium ripgrep vagrant openssh-client
  openssh-server iproute2 qemu-system-x86 linux-image-amd64 e2fsprogs xz-utils)
# nodejs and npm: the agent CLIs and the web UI's build tools.
command -v npm >/dev/null || need+=(nodejs npm)
missing=()
for pkg in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v go >/dev/null; then
  [ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null || { echo "setup: Go 1.26 or newer is needed (https://go.dev/dl)"; exit 1; }

# step NAME FUNCTION: runs FUNCTION in the background, each line of its output prefixed
# with "setup: [NAME]", and says when it is done and how long it took.
steps=()
step() {
  local name=$1 fn=$2
  echo "setup: [$name] started"
  (
    start=$(date +%s)
    set +e # not `if`: errexit would be off inside the step
    ( set -euo pipefail; "$fn" ) 2>&1 | sed -u "s/^/setup: [$name] /"
    if [ "${PIPESTATUS[0]}" != 0 ]; then
      echo "setup: [$name] FAILED after $(($(date +%s) - start))s (its output above)"
      exit 1
    fi
    echo "setup: [$name] done in $(($(date +%s) - start))s"
  ) &
  steps+=("$name:$!")
}

# The agent CLIs the end-to-end tests run for real, at the versions they were written for.
agents() {
  local pkg bin
  for pkg in "@anthropic-ai/claude-code@2.1.330" "@openai/codex@0.169.0" "@google/gemini-cli@0.61.0" "@qwen-code/qwen-code@0.24.4" "opencode-ai@1.18.33"; do
    bin=claude; [[ $pkg == @openai/codex* ]] && bin=codex; [[ $pkg == @google/gemini-cli* ]] && bin=gemini; [[ $pkg == @qwen-code/* ]] && bin=qwen; [[ $pkg == opencode-ai* ]] && bin=opencode
    if ! command -v "$bin" >/dev/null || ! "$bin" --version 2>/dev/null | grep -q "${pkg##*@}"; then
      echo "npm install -g $pkg"
      $sudo npm install -g --no-fund --no-audit "$pkg" >/dev/null
    fi
  done
}

# The web UI's build tools (esbuild) and packages, at the versions web/package-lock.json
# pins; no install scripts run. Done again only when the lock file changed.
webdeps() {
  local stamp=web/node_modules/.paddock-package-lock.sha256 sum
  sum=$(sha256sum web/package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
    echo "web/node_modules is as web/package-lock.json pins"
    return 0
  fi
  echo "npm ci in web/"
  (cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$sum" >"$stamp"
}

# MinIO, the S3 server the snapshot store's tests run against (internal/snapshot/storage),
# built from the Go module proxy at a pinned version: MinIO publishes no Debian package.
minio_build() {
  local gopath_minio
  gopath_minio="$(go env GOPATH)/bin/minio"
  if ! minio --version >/dev/null 2>&1 && ! "$gopath_minio" --version >/dev/null 2>&1; then
    echo "building MinIO from the Go module proxy (about 10 minutes the first time)"
    GOFLAGS=-trimpath go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
  fi
  if ! command -v minio >/dev/null && [ -x "$gopath_minio" ]; then
    $sudo ln -sf "$gopath_minio" /usr/local/bin/minio
  fi
}

# staticcheck, which make lint runs, at the version the tree is kept clean with.
staticcheck_install() {
  if ! "$(go env GOPATH)/bin/staticcheck" -version 2>/dev/null | grep -q "(0.8.2)"; then
    echo "go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"
    GOFLAGS=-trimpath go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
  fi
}

# The kubernetes backend's tests run against a real single-node cluster, which make test
# brings up as root (scripts/k8s-up.sh): its binaries are built from source, about 10
# minutes the first time, and kept in root's ~/.cache/paddock-k8s.
kubernetes_build() {
  echo "Kubernetes binaries and images for the kubernetes backend's tests (about 10 minutes the first time)"
  $sudo ./scripts/k8s-up.sh --build-only
}

# paddock itself, then the engine's runsc runtime and the sandbox image.
paddock_build() {
  go mod download
  make build
  docker_setup
}

# gVisor's runsc as the engine's runtime "runsc" (paddock up --runtime runsc): merged into
# /etc/docker/daemon.json, keeping whatever else it holds. --network=none: the sandbox gets
# gVisor's own loopback and no interface (the closed network), and Debian's runsc build
# starts only that way on recent kernels.
register_runsc() {
  $sudo python3 - /etc/docker/daemon.json "$(command -v runsc)" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
conf = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        conf = json.load(f)
want = {"path": runsc, "runtimeArgs": ["--network=none"]}
if conf.get("runtimes", {}).get("runsc") != want:
    conf.setdefault("runtimes", {})["runsc"] = want
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("registered runsc in " + path)
PY
}
runsc_registered() {
  docker info --format '{{json .Runtimes.runsc}}' 2>/dev/null | grep -q -- '--network=none'
}
docker_setup() {
  register_runsc
  # The docker backend's tests need an engine and the sandbox image (built here, with no
  # registry: a Debian root filesystem from mmdebstrap, imported into the engine).
  if ! docker info >/dev/null 2>&1; then
    if command -v dockerd >/dev/null; then
      echo "starting dockerd"
      $sudo sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
      for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    fi
  fi
  if docker info >/dev/null 2>&1 && ! runsc_registered; then
    # dockerd reloads its runtimes on SIGHUP (systemctl reload docker sends the same).
    echo "reloading dockerd for the runsc runtime"
    $sudo kill -HUP $(pidof dockerd)
    for _ in $(seq 30); do runsc_registered && break; sleep 1; done
    runsc_registered || { echo "dockerd did not take the runsc runtime (see its log)"; exit 1; }
  fi
  if docker info >/dev/null 2>&1; then
    home=$(mktemp -d)
    chmod 711 "$home"
    PADDOCK_HOME=$home bin/paddock image build --minimal --agents claude
    PADDOCK_HOME=$home bin/paddock daemon stop >/dev/null 2>&1 || true
    rm -rf "$home"
  else
    echo "no Docker engine answers: the docker backend's tests will be skipped"
  fi
}

step paddock paddock_build
step agents agents
step web webdeps
step minio minio_build
step staticcheck staticcheck_install
step kubernetes kubernetes_build
failed=()
for s in "${steps[@]}"; do
  wait "${s#*:}" || failed+=("${s%%:*}")
done
if ((${#failed[@]})); then
  echo "setup: FAILED: ${failed[*]} (their output above, each line marked with the step's name)"
  exit 1
fi
echo "setup: done; bin/paddock is built. Run the tests with: make test"
