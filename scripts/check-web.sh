#!/usr/bin/env bash
# Checks that the web UI the binary embeds (internal/webui/dist) is what web/ builds: a
# clean install of the locked packages (npm ci) and the build run in a temporary copy of
# web/, and their output must equal the committed files byte for byte (esbuild's output
# depends only on its input and version).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/web"
tar -C web --exclude=./node_modules -cf - . | tar -C "$tmp/web" -xf -
(cd "$tmp/web" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && node build.mjs --outdir "$tmp/dist")
if ! diff -r "$tmp/dist" internal/webui/dist; then
  echo "check-web: internal/webui/dist is not what web/ builds: run make web and commit internal/webui/dist" >&2
  exit 1
fi
echo "check-web: internal/webui/dist is what web/ builds"
