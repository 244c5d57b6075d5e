#!/usr/bin/env bash
# Runs every fuzz target of the repository in turn, each for FUZZTIME (10s unless set).
# Their seed corpora also run with the ordinary tests; this explores beyond them. A failing
# input is saved under the package's testdata/fuzz and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
go=${GO:-go}
targets=$(grep -rH --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' internal | sed 's/:func /:/' | sort)
for t in $targets; do
  file=${t%%:*} name=${t##*:}
  pkg=./$(dirname "$file")
  echo "fuzz: $name in $pkg for $fuzztime"
  CGO_ENABLED=0 "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
done
