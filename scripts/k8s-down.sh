#!/usr/bin/env bash
# k8s-down.sh [STATE_DIR]
#
# Tears down what k8s-up.sh started (default STATE_DIR /tmp/paddock-k8s):
# stops its processes (by pid file: the provisioner localpv too) and pod
# containers, unmounts everything under STATE_DIR, restores the sysctls kubelet
# changed, removes the kubelet iptables chains, kubepods cgroups, the CNI bridge
# and node-IP interface, the host files kubelet/CNI/containerd left, and finally
# STATE_DIR, with the volumes' directories (STATE_DIR/volumes). The build cache is
# kept. Never touches dockerd or its containerd, nor, while another STATE_DIR's
# cluster is up, what the two share (pods, network, chains, sysctls, cgroups).
# Safe to run twice.
set -uo pipefail   # no -e: keep cleaning up after a failed step

NODE_IF=pdk8s0
CNI_BRIDGE=cni0
CNI_NET=paddock-k8s
KUBE_CHAINS=(KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT)

STATE=${1:-/tmp/paddock-k8s}
case "$STATE" in -h|--help) sed -n '2,12p' "$0"; exit 0 ;; esac
[ -d "$STATE" ] && STATE=$(cd "$STATE" && pwd -P)
[ "$STATE" != / ] || { echo "k8s: refusing STATE_DIR=/" >&2; exit 2; }
PIDS=$STATE/pids
CTR_SOCK=$STATE/run/containerd.sock
FAILED=0
log() { echo "k8s: $*" >&2; }
warn() { echo "k8s: WARNING: $*" >&2; FAILED=1; }
[ "$(id -u)" = 0 ] || { echo "k8s: must run as root" >&2; exit 1; }
T0=$(date +%s)
log "tearing down $STATE..."

# ours PID: the process exists and its command line mentions STATE/ (so a
# recycled pid, or dockerd's containerd and its shims, never match).
ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "$STATE/"; }
# kill_pids TIMEOUT_S PID...: TERM, wait, then KILL what is left.
kill_pids() {
	local timeout=$1; shift
	local p left
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null
	for _ in $(seq $(( timeout * 10 ))); do
		left=0
		for p in "$@"; do [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && left=1; done
		[ $left = 0 ] && return 0
		sleep 0.1
	done
	log "still running after ${timeout}s, sending SIGKILL to $*"
	kill -KILL "$@" 2>/dev/null
	sleep 0.2
}
stop() { # stop NAME [TIMEOUT_S]
	local pid
	pid=$(cat "$PIDS/$1.pid" 2>/dev/null) || return 0
	if [ -n "$pid" ] && ours "$pid"; then
		log "stopping $1 (pid $pid)"
		kill_pids "${2:-10}" "$pid"
	fi
	rm -f "$PIDS/$1.pid"
}
kubepods_cgroups() { ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null; }

# Another cluster up (a kubelet not of STATE: down run on a stale STATE_DIR, e.g. a
# test run's leftover, while a cluster of another STATE_DIR runs)? The pods' cgroups,
# the interfaces, iptables chains and sysctls have fixed names, so they are that
# cluster's: leave them to it, and undo only what is under STATE.
SHARED=1
for d in /proc/[0-9]*; do
	case "$(readlink "$d/exe" 2>/dev/null)" in */kubelet|*"/kubelet (deleted)") ;; *) continue ;; esac
	grep -qF "$STATE/" "$d/cmdline" 2>/dev/null && continue
	log "another cluster's kubelet runs (pid ${d#/proc/}): leaving the pods, network, chains, sysctls and cgroups to it"
	SHARED=0
	break
done

# 1. kubelet first, so nothing restarts the containers.
stop kubelet

# 2. Pod processes: everything in the kubepods cgroups (kubelet's cgroupfs tree).
pids=
[ $SHARED = 1 ] && for _ in $(seq 20); do
	pids=
	cgs=$(kubepods_cgroups)
	[ -n "$cgs" ] || break
	pids=$(find $cgs -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
	[ -z "$pids" ] && break
	kill -KILL $pids 2>/dev/null
	sleep 0.25
done
[ -z "$pids" ] || warn "pod processes still alive: $pids"

# 3. containerd shims of our containerd (their command line names our socket).
shims=()
for d in /proc/[0-9]*; do
	p=${d#/proc/}
	tr '\0' ' ' 2>/dev/null <"$d/cmdline" | grep -qF -- "-address $CTR_SOCK " && shims+=("$p")
done
[ ${#shims[@]} -eq 0 ] || { log "stopping ${#shims[@]} containerd shim(s)"; kill_pids 5 "${shims[@]}"; }

# 4. The provisioner, the control plane, containerd, etcd.
stop localpv
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver
stop containerd
stop etcd

# Anything else of ours still running (e.g. a pid file lost after a crashed
# up): one of the binaries up starts, with STATE in its command line. dockerd's
# containerd and shims never mention STATE.
stray=()
for d in /proc/[0-9]*; do
	case "$(readlink "$d/exe" 2>/dev/null)" in
	*/etcd|*/containerd|*/containerd-shim*|*/kube-apiserver|*/kube-controller-manager|*/kube-scheduler|*/kubelet|*/paddock-localpv) ;;
	*) continue ;;
	esac
	grep -qF "$STATE/" "$d/cmdline" 2>/dev/null && stray+=("${d#/proc/}")
done
[ ${#stray[@]} -eq 0 ] || { log "stopping stray processes: ${stray[*]}"; kill_pids 5 "${stray[@]}"; }

# 5. Mounts under STATE: kubelet's root-dir bind mount, pod volumes (tmpfs),
# container rootfs overlays, shm, netns bind mounts. Deepest first; repeat for
# stacked mounts.
mounts_under() {
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo | sort -ru
}
if [ -d "$STATE" ]; then
	for _ in $(seq 10); do
		m=$(mounts_under "$STATE")
		[ -z "$m" ] && break
		while read -r mp; do umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null; done <<<"$m"
	done
	[ -z "$(mounts_under "$STATE")" ] || warn "mounts left under $STATE: $(mounts_under "$STATE" | tr '\n' ' ')"
fi

# 6.-9. Only while no other cluster runs (above).
if [ $SHARED = 1 ]; then
	# 6. Network: the CNI bridge (pod veths vanish with their netns) and the node IP's interface.
	ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && { log "deleting $CNI_BRIDGE"; ip link del "$CNI_BRIDGE"; }
	ip link show "$NODE_IF" >/dev/null 2>&1 && { log "deleting $NODE_IF"; ip link del "$NODE_IF"; }

	# 7. iptables/ip6tables chains kubelet creates: drop the rules jumping to them, flush, delete.
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		for table in filter nat mangle; do
			for chain in "${KUBE_CHAINS[@]}"; do
				$ipt -w -t $table -S "$chain" >/dev/null 2>&1 || continue
				$ipt -w -t $table -S | grep -E -- "-j $chain( |\$)" | sed 's/^-A /-D /' |
					while read -r rule; do eval "$ipt -w -t $table $rule"; done
				$ipt -w -t $table -F "$chain" && $ipt -w -t $table -X "$chain" ||
					warn "could not delete $ipt -t $table $chain"
			done
		done
	done

	# 8. sysctls saved by up.
	if [ -f "$STATE/host/sysctl.saved" ]; then
		while IFS='=' read -r k v; do
			[ -n "$k" ] || continue
			[ "$(sysctl -n "$k" 2>/dev/null)" = "$v" ] && continue
			log "restoring $k=$v"
			sysctl -qw "$k=$v" || warn "could not restore $k=$v"
		done <"$STATE/host/sysctl.saved"
	fi

	# 9. kubepods cgroups (empty now), deepest first.
	for cg in $(kubepods_cgroups); do
		[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	[ -z "$(kubepods_cgroups)" ] || warn "cgroups left: $(kubepods_cgroups | tr '\n' ' ')"
fi

# 10. Host paths outside STATE. Remove only what we own; remove a directory
# only if it did not exist before up (per STATE/host/preexisting) and is empty.
preexisted() { grep -qxF "$1" "$STATE/host/preexisting" 2>/dev/null; }
# (and not while another cluster runs: they are its now)
rmdir_if_new() { [ $SHARED = 1 ] && [ -d "$1" ] && ! preexisted "$1" && rmdir "$1" 2>/dev/null; return 0; }
[ $SHARED = 0 ] || rm -f /var/lib/kubelet/device-plugins/kubelet.sock   # kubelet hardcodes this path
rmdir_if_new /var/lib/kubelet/device-plugins
rmdir_if_new /var/lib/kubelet
if [ -d /var/log/containers ]; then                       # kubelet's log symlinks (hardcoded dir)
	for l in /var/log/containers/*; do
		[ -L "$l" ] && case "$(readlink "$l")" in "$STATE"/*) rm -f "$l" ;; esac
	done
	rmdir_if_new /var/log/containers
fi
# libcni's result cache (hardcoded dir): our network's entries and the
# cni-loopback-SANDBOX_ID-lo entries of our sandboxes.
[ $SHARED = 0 ] || rm -f /var/lib/cni/results/"$CNI_NET"-*   # the other cluster's too
for sb in "$STATE"/containerd/{root,state}/io.containerd.grpc.v1.cri/sandboxes/*; do
	[ -d "$sb" ] && rm -f /var/lib/cni/results/cni-loopback-"${sb##*/}"-*
done
rmdir_if_new /var/lib/cni/results
rmdir_if_new /var/lib/cni
rmdir_if_new /run/containerd/runc   # (runc's root is under STATE; these are
rmdir_if_new /run/containerd/fifo   #  only removed if new and empty)

# kubectl's discovery cache for this cluster's address (stale once it is gone).
rm -rf "${HOME:-/root}/.kube/cache/discovery/127.0.0.1_6443"

# 11. STATE itself -- only when nothing is mounted under it any more.
if [ -d "$STATE" ]; then
	if [ -z "$(mounts_under "$STATE")" ]; then
		rm -rf --one-file-system "$STATE" || warn "could not remove $STATE"
	else
		warn "not removing $STATE: mounts remain"
	fi
fi

if [ $FAILED = 0 ]; then
	log "down in $(( $(date +%s) - T0 ))s"
else
	log "down finished with warnings (above) in $(( $(date +%s) - T0 ))s"
	exit 1
fi
