#!/usr/bin/env bash
# test.sh [GO_TEST_FLAGS...]: every test (make test, the README's test command), with the
# real single-node Kubernetes cluster the kubernetes backend's tests run against.
#
# As root, scripts/k8s-up.sh brings the cluster up first at $PADDOCK_K8S_TEST_STATE
# (default /tmp/paddock-k8s-test), the tests find it in PADDOCK_TEST_KUBECONFIG and
# PADDOCK_TEST_K8S_STATE, and scripts/k8s-down.sh tears it down completely after,
# whatever the result (interrupted too). The exit status is go test's. Not root, or the
# cluster cannot come up: the tests run without those variables, so the kubernetes
# backend's tests skip, or fail under PADDOCK_TEST_STRICT=1 (CI). PADDOCK_TEST_KUBECONFIG
# already set: that cluster is used as it is, none is made.
set -uo pipefail   # no -e: the teardown and go test's status must survive a failure
cd "$(dirname "$0")/.."
GO=${GO:-go}
STATE=${PADDOCK_K8S_TEST_STATE:-/tmp/paddock-k8s-test}
log() { echo "test: $*" >&2; }
without="the kubernetes backend's tests skip, or fail under PADDOCK_TEST_STRICT=1"

cluster=0   # 1 once k8s-up.sh has run: from then on, down undoes whatever it did
down() {
	[ $cluster = 1 ] || return 0
	cluster=0
	log "tearing down the cluster at $STATE"
	./scripts/k8s-down.sh "$STATE" || log "WARNING: scripts/k8s-down.sh $STATE left something (above)"
}
trap down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${PADDOCK_TEST_KUBECONFIG:-}" ]; then
	log "using the cluster of PADDOCK_TEST_KUBECONFIG=$PADDOCK_TEST_KUBECONFIG as it is"
elif [ "$(id -u)" != 0 ]; then
	log "not root, so no Kubernetes cluster (scripts/k8s-up.sh needs root): $without"
else
	# A cluster left at STATE (a run killed before its teardown) is torn down, not
	# reused: it holds a past run's namespaces, pods and volumes, it may be half up, and
	# an older k8s-up.sh or localpv may have made it; a fresh one costs well under a
	# minute, and the tests then start from a known cluster.
	if [ -d "$STATE" ]; then
		log "tearing down the cluster a previous run left at $STATE"
		./scripts/k8s-down.sh "$STATE" || log "WARNING: scripts/k8s-down.sh $STATE left something (above)"
	fi
	log "bringing up Kubernetes at $STATE for the kubernetes backend's tests"
	cluster=1
	if ./scripts/k8s-up.sh "$STATE" >/dev/null; then
		export PADDOCK_TEST_KUBECONFIG=$STATE/kubeconfig PADDOCK_TEST_K8S_STATE=$STATE
	else
		log "the cluster did not come up (above), so the tests run without it: $without"
		down
	fi
fi

CGO_ENABLED=0 $GO test -count=1 -timeout 40m "$@" ./...
rc=$?
down
exit $rc
