#!/usr/bin/env bash
# test.sh [--quick] [GO_TEST_FLAGS...]: every test (make test, the README's test command),
# with the real single-node Kubernetes cluster the kubernetes backend's tests run against;
# --quick (make test-quick) leaves out the heavy tests: microVMs, the cluster, Vagrant and
# Chromium (go test -short; testenv.Heavy skips them).
#
# Packages, in go test commands run side by side by scripts/testrun (which prints what go
# test prints, writes every test's duration to test-durations.txt and ends with the
# slowest 20; its exit status is the first failing go test's):
#   - packages whose tests need nothing make setup installs (their test binary does not
#     link internal/testenv) run with Go's test cache: an unchanged package is not re-run;
#   - every other package runs each time (-count=1): they drive sandboxes, daemons,
#     engines and clusters whose state the cache cannot see;
#   - the heavy packages (HEAVY below) run in a go test of their own from the start, and
#     so do internal/cli's scripts and its other tests, the longest, so that they run beside
#     the rest rather than after it.
#
# As root, scripts/k8s-up.sh brings the cluster up in the background at
# $PADDOCK_K8S_TEST_STATE (default /tmp/paddock-k8s-test) while the tests start: the
# tests that need it wait for it (k8stest reads $PADDOCK_TEST_K8S_WAIT, which this script
# writes "up" or "failed" into), and scripts/k8s-down.sh tears it down completely after,
# whatever the result (interrupted too). Not root, or the cluster cannot come up: the
# kubernetes backend's tests skip, or fail under PADDOCK_TEST_STRICT=1 (CI).
# PADDOCK_TEST_KUBECONFIG already set: that cluster is used as it is, none is made.
#
# TEST_P (default 2) and TEST_PARALLEL (default 2) are go test's -p and -parallel.
# TEST_CLI_PARALLEL is internal/cli's -parallel: TEST_PARALLEL, or 4 under --quick, where
# nothing keeps the processors busy for long (no emulated VM, cluster or browser) and its
# two processes, whose tests mostly wait on sandboxes and agents, are the longest.
set -uo pipefail   # no -e: the teardown and go test's status must survive a failure
{ # bash reads the whole block before it runs it: this file edited during a run leaves the run be
cd "$(dirname "$0")/.."
GO=${GO:-go}
export CGO_ENABLED=0
STATE=${PADDOCK_K8S_TEST_STATE:-/tmp/paddock-k8s-test}
P=${TEST_P:-2}
PARALLEL=${TEST_PARALLEL:-2}
quick=0
if [ "${1:-}" = --quick ]; then
	quick=1
	shift
fi
if [ $quick = 1 ]; then CLI_PARALLEL=${TEST_CLI_PARALLEL:-${TEST_PARALLEL:-4}}; else CLI_PARALLEL=${TEST_CLI_PARALLEL:-$PARALLEL}; fi
log() { echo "test: $*" >&2; }
without="the kubernetes backend's tests skip, or fail under PADDOCK_TEST_STRICT=1"
mod=github.com/paddockhq/paddock
# HEAVY: a microVM under TCG, the cluster, Vagrant machines, Chromium.
HEAVY="$mod/internal/backend/microvm $mod/internal/backend/kubernetes $mod/internal/backend/vagrant $mod/internal/webui"
CLI=$mod/internal/cli

cluster=0   # 1 once the cluster's bring-up has started: from then on, down undoes it
upper=      # the background bring-up's pid
down() {
	[ $cluster = 1 ] || return 0
	cluster=0
	if [ -n "$upper" ] && kill -0 "$upper" 2>/dev/null; then
		log "stopping the cluster's bring-up"
		kill -- -"$upper" 2>/dev/null
		wait "$upper" 2>/dev/null
	fi
	log "tearing down the cluster at $STATE"
	./scripts/k8s-down.sh "$STATE" 2>"$STATE.down.log" || { cat "$STATE.down.log" >&2; log "WARNING: scripts/k8s-down.sh $STATE left something (above)"; }
	rm -f "$STATE.status"
}
trap down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ $quick = 1 ]; then
	set -- -short "$@"
elif [ -n "${PADDOCK_TEST_KUBECONFIG:-}" ]; then
	log "using the cluster of PADDOCK_TEST_KUBECONFIG=$PADDOCK_TEST_KUBECONFIG as it is"
elif [ "$(id -u)" != 0 ]; then
	log "not root, so no Kubernetes cluster (scripts/k8s-up.sh needs root): $without"
else
	# A cluster left at STATE (a run killed before its teardown) is torn down, not
	# reused: it holds a past run's namespaces, pods and volumes, it may be half up, and
	# an older k8s-up.sh or localpv may have made it; a fresh one costs well under a
	# minute, and the tests then start from a known cluster.
	log "bringing up Kubernetes at $STATE in the background (log: $STATE.log)"
	rm -f "$STATE.status"
	cluster=1
	# In a session of its own (setsid), so that down can stop the whole of it.
	setsid bash -c '
		state=$1
		if [ -d "$state" ]; then
			echo "test: tearing down the cluster a previous run left at $state"
			./scripts/k8s-down.sh "$state"
		fi
		start=$(date +%s)
		if ./scripts/k8s-up.sh "$state" >/dev/null; then
			echo up >"$state.status.tmp"
			echo "test: the cluster is up ($(($(date +%s) - start))s)"
		else
			echo failed >"$state.status.tmp"
		fi
		mv "$state.status.tmp" "$state.status"' bring-up "$STATE" >"$STATE.log" 2>&1 </dev/null &
	upper=$!
	export PADDOCK_TEST_KUBECONFIG=$STATE/kubeconfig PADDOCK_TEST_K8S_STATE=$STATE PADDOCK_TEST_K8S_WAIT=$STATE.status
fi

# Which packages may use the test cache: those whose test binary does not link
# internal/testenv (the gate of every test that needs a tool, a daemon or a cluster).
cached=() uncached=()
while read -r kind pkg; do
	case " $HEAVY $CLI " in *" $pkg "*) continue ;; esac
	if [ "$kind" = cached ]; then cached+=("$pkg"); else uncached+=("$pkg"); fi
done < <("$GO" list -test -f '{{if eq .Name "main"}}{{.ImportPath}} {{join .Deps " "}}{{end}}' ./... |
	awk -v gate="$mod/internal/testenv" '$1 ~ /\.test$/ {
		kind = "cached"; for (i = 2; i <= NF; i++) if ($i == gate) kind = "uncached"
		sub(/\.test$/, "", $1); print kind, $1 }')
if [ ${#cached[@]} = 0 ] && [ ${#uncached[@]} = 0 ]; then
	log "go list found no packages (above)"
	exit 1
fi

gotest=("$GO" test -json -timeout 40m -parallel "$PARALLEL")
clitest=("$GO" test -json -timeout 40m -parallel "$CLI_PARALLEL" -count=1)
# internal/cli in three test processes: its scripts (TestScripts, run in parallel with
# each other), its heavy end-to-end tests (a name holding MicroVM, Kubernetes or Vagrant:
# Claude Code in a microVM under TCG is the longest test of all), and its other tests.
# Under --quick the heavy ones skip at once, so they go with the other tests rather than
# cost a third link of the package's test binary. (Flags that pick tests, -run or -skip,
# keep it one.)
heavy_cli='MicroVM|Kubernetes|Vagrant'
case " $* " in
*" -run"* | *" -skip"* | *" -test.run"* | *" -test.skip"*) cmds=("${clitest[@]}" "$@" $CLI) ;;
*)
	if [ $quick = 1 ]; then
		cmds=("${clitest[@]}" -skip '^TestScripts$' "$@" $CLI)
	else
		cmds=("${clitest[@]}" -run "$heavy_cli" "$@" $CLI)
		cmds+=(--- "${clitest[@]}" -skip "^TestScripts\$|$heavy_cli" "$@" $CLI)
	fi
	cmds+=(--- "${clitest[@]}" -run '^TestScripts$' "$@" $CLI)
	;;
esac
cmds+=(--- "${gotest[@]}" -count=1 -p "$P" "$@" $HEAVY)
[ ${#uncached[@]} = 0 ] || cmds+=(--- "${gotest[@]}" -count=1 -p "$P" "$@" "${uncached[@]}")
[ ${#cached[@]} = 0 ] || cmds+=(--- "${gotest[@]}" -p "$P" "$@" "${cached[@]}")
"$GO" run ./scripts/testrun -report test-durations.txt -slowest 20 "${cmds[@]}"
rc=$?
if [ $cluster = 1 ] && grep -q failed "$STATE.status" 2>/dev/null; then
	cat "$STATE.log" >&2
	log "the cluster did not come up (above): $without"
fi
down
exit $rc
}
