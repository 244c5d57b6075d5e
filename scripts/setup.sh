#!/usr/bin/env bash
# Installs what paddock's tests need on a fresh Debian machine, then builds paddock.
set -euo pipefail

need=(bubblewrap git tmux curl ca-certificates procps python3 busybox-static)
missing=()
for pkg in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v go >/dev/null; then
  [ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null || { echo "setup: Go 1.26 or newer is needed (https://go.dev/dl)"; exit 1; }

go mod download
make build
echo "setup: done; bin/paddock is built. Run the tests with: make test"
