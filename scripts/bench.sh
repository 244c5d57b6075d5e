#!/usr/bin/env bash
# bench.sh [short]: runs the benchmarks and prints one table of every figure
# docs/benchmarks.tsv tracks beside its committed value, flagging any more than 25% worse.
# A benchmark that fails fails the script; a flag never does (a shared machine is noisy).
# The short form (CI's) runs the fast ones a few times each, so none can rot unseen.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=${BENCH_OUT:-bench.out}
run() { CGO_ENABLED=0 "$GO" test -run '^$' "$@" | tee -a "$out"; }
: > "$out"
if [ "${1:-}" = short ]; then
  run -bench '^Benchmark(CreateToFirstExec|ExecRoundTrip|FileWriteRead)$' -benchtime 3x ./internal/backend/bwrap/
  run -bench '^Benchmark(WriteFile|ReadFile)$' -benchtime 3x ./internal/guestclient/
  run -bench '^Benchmark(CLIExec|ContextExec|Sync)$' -benchtime 3x ./internal/cli/
  run -bench '^BenchmarkCLIStart$' -benchtime 5x ./internal/front/
  run -bench '^BenchmarkCLISync$' -benchtime 3x ./internal/front/
else
  run -bench '^Benchmark([^CST]|C[^h]|S[^n]|T[^a])' -benchtime 20x ./internal/backend/bwrap/ ./internal/backend/docker/ ./internal/cli/ ./internal/guestclient/ ./internal/tui/ ./internal/front/
  run -bench '^BenchmarkSnapshot$' -benchtime 3x -timeout 30m ./internal/cli/
  # The time machine's: one 500 MB workspace made for all its parts (about a minute).
  run -bench '^BenchmarkCheckpoint$' -benchtime 3x -timeout 60m ./internal/cli/
  # The tasks' benchmarks take seconds to minutes an iteration (agents at work for 15 s).
  run -bench '^BenchmarkTask' -benchtime 5x -timeout 30m ./internal/cli/
  run -bench . -benchtime 3x -timeout 30m ./internal/backend/vagrant/ ./internal/backend/microvm/
fi
echo
"$GO" run ./scripts/benchtable -figures docs/benchmarks.tsv < "$out"
