#!/usr/bin/env bash
# Runs every fuzz target of the repository in turn, each for FUZZTIME (10s unless set).
# Their seed corpora also run with the ordinary tests; this explores beyond them. A failing
# input is saved under the package's testdata/fuzz and fails the run.
#
# Go before 1.27 can end a duration-bounded fuzz run with a bare "context deadline exceeded"
# on a loaded machine, a race in its fuzzing coordinator (go.dev/issue/75804) with no failing
# input behind it. A run that fails that way without saving an input is run once more; a second
# failure, or any failure that saved an input, fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
go=${GO:-go}
targets=$(grep -rH --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' internal | sed 's/:func /:/' | sort)

inputs() { find "$1/testdata/fuzz/$2" -type f 2>/dev/null | sort || true; }

for t in $targets; do
  file=${t%%:*} name=${t##*:}
  pkg=./$(dirname "$file")
  for try in 1 2; do
    echo "fuzz: $name in $pkg for $fuzztime"
    before=$(inputs "$pkg" "$name")
    log=$(mktemp)
    if CGO_ENABLED=0 "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
      rm -f "$log"
      break
    fi
    after=$(inputs "$pkg" "$name")
    if [ "$try" = 1 ] && [ "$before" = "$after" ] && grep -q 'context deadline exceeded' "$log"; then
      echo "fuzz: $name stopped on Go's fuzztime race (go.dev/issue/75804) with no failing input; once more"
      rm -f "$log"
      continue
    fi
    rm -f "$log"
    echo "fuzz: $name failed" >&2
    exit 1
  done
done
