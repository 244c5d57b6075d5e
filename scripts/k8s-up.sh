#!/usr/bin/env bash
# k8s-up.sh [--load-image NAME]... [STATE_DIR]
# k8s-up.sh --build-only
#
# Brings up a real single-node Kubernetes v1.36.3 cluster on this host for tests:
# etcd, a private containerd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and a storage provisioner (localpv), all as background
# processes. No kube-proxy, no cluster DNS, no outbound NAT for pods. The default
# StorageClass, paddock-local, gets every claim a directory under STATE_DIR/volumes.
# Every pod may run at most 512 processes. Undo everything with k8s-down.sh.
#
#   STATE_DIR           everything the cluster writes (default /tmp/paddock-k8s)
#   --load-image NAME   `docker save` a local docker image into the cluster's
#                       containerd (repeatable); pods use imagePullPolicy: Never
#   --build-only        only install the packages and build the binaries and images
#                       into the cache (what make setup does): no cluster
#   PADDOCK_K8S_CACHE   where the built binaries and images are kept
#                       (default $HOME/.cache/paddock-k8s/v1.36.3)
#
# Progress goes to stderr; stdout gets only `export KUBECONFIG=...`, so
#   eval "$(scripts/k8s-up.sh)"
# works. Idempotent: re-running it with the cluster up loads images, and restarts
# only the components whose binary, command line or config file changed.
# Needs root. The comments say why each setting is here (a cgroup v1 host, root without
# CAP_SYS_RESOURCE, no dummy network driver, dockerd and its containerd left alone).
set -euo pipefail

K8S_VERSION=v1.36.3
STAGING_VERSION=v0.36.3        # version of the k8s.io/* staging modules matching K8S_VERSION
NODE_NAME=paddock-k8s
NODE_IP=192.0.2.2              # kubelet refuses a loopback node IP; lives on NODE_IF
NODE_IF=pdk8s0                 # that interface (dummy, or an empty bridge)
CNI_BRIDGE=cni0
CNI_NET=paddock-k8s            # CNI network name
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
SERVICE_IP=10.96.0.1           # first IP of SERVICE_CIDR (in the apiserver cert)
ETCD_PORT=2379
ETCD_PEER_PORT=2380
APISERVER_PORT=6443
KUBELET_PORT=10250
PAUSE_IMAGE=localhost/paddock-k8s/pause:1
BUSYBOX_IMAGE=localhost/paddock-k8s/busybox:1

LOAD_IMAGES=()
STATE=
BUILD_ONLY=0
while [ $# -gt 0 ]; do
	case "$1" in
	--load-image) [ $# -ge 2 ] || { echo "k8s: --load-image needs an image name" >&2; exit 2; }
		LOAD_IMAGES+=("$2"); shift 2 ;;
	--load-image=*) LOAD_IMAGES+=("${1#*=}"); shift ;;
	--build-only) BUILD_ONLY=1; shift ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	-*) echo "k8s: unknown option $1" >&2; exit 2 ;;
	*) [ -z "$STATE" ] || { echo "k8s: only one STATE_DIR" >&2; exit 2; }
		STATE=$1; shift ;;
	esac
done
if [ $BUILD_ONLY = 1 ]; then
	[ -z "$STATE" ] && [ ${#LOAD_IMAGES[@]} = 0 ] ||
		{ echo "k8s: --build-only takes no STATE_DIR and no --load-image" >&2; exit 2; }
else
	STATE=${STATE:-/tmp/paddock-k8s}
	mkdir -p "$STATE"
	STATE=$(cd "$STATE" && pwd -P)   # absolute: it ends up in configs and pid checks
fi
CACHE=${PADDOCK_K8S_CACHE:-$HOME/.cache/paddock-k8s/$K8S_VERSION}
REPO=$(cd "$(dirname "$0")/.." && pwd -P)   # localpv is built from the script's own tree
BIN=$CACHE/bin
PKI=$STATE/pki
LOGS=$STATE/logs
PIDS=$STATE/pids
CTR_SOCK=$STATE/run/containerd.sock
KUBECONFIG_ADMIN=$STATE/kubeconfig
export PATH=/usr/local/go/bin:$PATH

T0=$(date +%s)
log() { echo "k8s: $*" >&2; }
CLEANUP_HINT="(clean up with: $REPO/scripts/k8s-down.sh $STATE)"
[ $BUILD_ONLY = 0 ] || CLEANUP_HINT="(nothing to clean up: --build-only starts nothing)"
die() { echo "k8s: ERROR: $*" >&2; echo "k8s: $CLEANUP_HINT" >&2; exit 1; }
# die_log COMPONENT MESSAGE: fail, pointing at the component's log (and its tail).
die_log() {
	echo "k8s: ERROR: $2 -- read $LOGS/$1.log" >&2
	[ -f "$LOGS/$1.log" ] && tail -n 15 "$LOGS/$1.log" | sed 's/^/    /' >&2
	echo "k8s: $CLEANUP_HINT" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"

# ---------------------------------------------------------------- packages
mkdir -p "$CACHE"
APT_LOG=${STATE:-$CACHE}/apt.log   # --build-only has no STATE
need_pkgs=()
for p in etcd-server containerd runc containernetworking-plugins busybox-static \
	openssl iptables iproute2 curl; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
	log "installing ${need_pkgs[*]} (apt)..."
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends "${need_pkgs[@]}" >"$APT_LOG" 2>&1 || {
		apt-get update >>"$APT_LOG" 2>&1 &&
		apt-get install -y --no-install-recommends "${need_pkgs[@]}" >>"$APT_LOG" 2>&1
	} || die "apt-get install failed -- read $APT_LOG"
fi
CNI_BIN=/usr/lib/cni
[ -x $CNI_BIN/bridge ] || die "no CNI bridge plugin in $CNI_BIN"

# ---------------------------------------------------------------- binaries (cached)
# A scratch module requiring k8s.io/kubernetes, with each staging module
# (k8s.io/X => ./staging/... in its go.mod) replaced by the published k8s.io/X.
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
need_go() { command -v go >/dev/null || die "go not found (looked in PATH and /usr/local/go/bin)"; }
build_k8s() {
	local src=$CACHE/src
	mkdir -p "$src" "$BIN"
	local c missing=0
	for c in "${K8S_CMDS[@]}"; do [ -x "$BIN/$c" ] || missing=1; done
	[ $missing = 1 ] || return 0
	need_go
	if [ ! -f "$src/.ready" ]; then
		log "preparing build module in $src (downloads k8s.io/kubernetes $K8S_VERSION)..."
		(
			cd "$src"
			export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
			local kmod
			kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
			[ -f "$kmod" ] || { echo "no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
			{
				echo "module paddock.local/k8s-build"
				echo
				echo "go 1.26"
				echo
				echo "require k8s.io/kubernetes $K8S_VERSION"
				echo
				sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#replace \1 => \1 '"$STAGING_VERSION"'#p' "$kmod"
			} >go.mod
			grep -q '^replace k8s.io/api ' go.mod || { echo "no staging replaces found in $kmod" >&2; exit 1; }
			local pkgs=()
			for c in "${K8S_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION"); done
			go get "${pkgs[@]}"
		) >"$CACHE/build.log" 2>&1 || die "preparing the build module failed -- read $CACHE/build.log"
		touch "$src/.ready"
	fi
	local ld="-s -w"
	for kv in gitVersion=$K8S_VERSION gitMajor=1 gitMinor=36 gitTreeState=clean \
		buildDate=1970-01-01T00:00:00Z; do
		ld="$ld -X k8s.io/component-base/version.$kv"
	done
	for c in "${K8S_CMDS[@]}"; do
		[ -x "$BIN/$c" ] && continue
		log "building $c (cached after)..."
		local t; t=$(date +%s)
		(cd "$src" && GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
			go build -trimpath -ldflags "$ld" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c") \
			>>"$CACHE/build.log" 2>&1 || die "building $c failed -- read $CACHE/build.log"
		mv "$BIN/$c.tmp" "$BIN/$c"
		log "built $c in $(( $(date +%s) - t ))s"
	done
}
build_k8s

# ---------------------------------------------------------------- images (cached)
# docker-archive tar (what `docker save` writes) from a directory tree:
# mk_image_tar ROOTFS_DIR REPO:TAG OUT.tar CONFIG_JSON_FRAGMENT
mk_image_tar() {
	local root=$1 ref=$2 out=$3 cfg=$4 tmp
	tmp=$(mktemp -d)
	tar -C "$root" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$tmp/layer.tar" .
	local diff; diff=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
	mkdir "$tmp/$diff"; mv "$tmp/layer.tar" "$tmp/$diff/layer.tar"
	printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$cfg" "$diff" >"$tmp/config.json"
	local cid; cid=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
	mv "$tmp/config.json" "$tmp/$cid.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cid" "$ref" "$diff" >"$tmp/manifest.json"
	tar -C "$tmp" --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out.tmp" manifest.json "$cid.json" "$diff"
	mv "$out.tmp" "$out"
	rm -rf "$tmp"
}
build_images() {
	mkdir -p "$CACHE/images"
	if [ ! -f "$CACHE/images/pause.tar" ]; then
		log "building pause image..."
		need_go
		local d; d=$(mktemp -d)
		mkdir -p "$d/src" "$d/root"
		# pause: PID 1 of every pod sandbox; sleeps, reaps zombies, exits on TERM/INT.
		cat >"$d/src/main.go" <<'EOF'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
EOF
		printf 'module pause\n\ngo 1.26\n' >"$d/src/go.mod"
		(cd "$d/src" && GOWORK=off GOFLAGS="" GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/root/pause" .) \
			>"$CACHE/images/pause-build.log" 2>&1 || die "building pause failed -- read $CACHE/images/pause-build.log"
		mk_image_tar "$d/root" "$PAUSE_IMAGE" "$CACHE/images/pause.tar" '{"Entrypoint":["/pause"]}'
		rm -rf "$d"
	fi
	if [ ! -f "$CACHE/images/busybox.tar" ]; then
		log "building busybox image..."
		local d; d=$(mktemp -d)
		mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/root" "$d/proc" "$d/sys" "$d/dev"
		chmod 1777 "$d/tmp"
		cp /bin/busybox "$d/bin/busybox"
		for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$d/bin/$a"; done
		printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$d/etc/passwd"
		printf 'root:x:0:\nnobody:x:65534:\n' >"$d/etc/group"
		mk_image_tar "$d" "$BUSYBOX_IMAGE" "$CACHE/images/busybox.tar" \
			'{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"]}'
		rm -rf "$d"
	fi
}
build_images

# ---------------------------------------------------------------- localpv (the provisioner)
# Built from this repository each time, unlike the rest: its source changes with the
# repo, and an unchanged one is a cached build and a link (seconds). It replaces the
# cached binary only when it differs, so a running provisioner is restarted (below) only
# for a real change: hence -buildvcs=false, or every commit would be one.
LOCALPV=$BIN/paddock-localpv
build_localpv() {
	need_go
	mkdir -p "$BIN"
	local t; t=$(date +%s)
	(cd "$REPO" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$LOCALPV.tmp" ./internal/backend/kubernetes/k8stest/localpv) \
		>"$CACHE/localpv-build.log" 2>&1 || die "building localpv failed -- read $CACHE/localpv-build.log"
	if cmp -s "$LOCALPV.tmp" "$LOCALPV"; then
		rm -f "$LOCALPV.tmp"
	else
		mv "$LOCALPV.tmp" "$LOCALPV"
		log "built localpv in $(( $(date +%s) - t ))s"
	fi
}
build_localpv

if [ $BUILD_ONLY = 1 ]; then
	log "binaries and images ready in $CACHE ($(( $(date +%s) - T0 ))s)"
	exit 0
fi

# ---------------------------------------------------------------- process helpers
mkdir -p "$LOGS" "$PIDS" "$STATE/run" "$STATE/host"
# running NAME: the pid file's process is alive and is ours (its command line
# mentions STATE/, so a recycled pid is never mistaken for it).
running() {
	local pid
	pid=$(cat "$PIDS/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$STATE/"
}
# stop_running NAME: TERM the component, wait for it to go (KILL after 30 s).
stop_running() {
	local pid; pid=$(cat "$PIDS/$1.pid")
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 300); do
		[ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || return 0
		sleep 0.1
	done
	log "$1 still running after 30s, sending SIGKILL"
	kill -KILL "$pid" 2>/dev/null
	sleep 0.2
}
# install_config FILE: move FILE.new to FILE; true if that changed FILE (so the
# component reading it must restart to see it).
install_config() {
	if cmp -s "$1.new" "$1"; then rm -f "$1.new"; return 1; fi
	mv "$1.new" "$1"
}
# start NAME CMD...: run in the background in its own session, log to LOGS/NAME.log.
# A running NAME is left alone, unless its binary was replaced, its command line
# differs, or RESTART_WHY (set for this call only) says why, a changed config file:
# then it is restarted, so that re-running up applies a changed script. Pods survive a kubelet or containerd
# restart.
start() {
	local name=$1; shift
	if running "$name"; then
		local pid why=${RESTART_WHY:-}
		pid=$(cat "$PIDS/$name.pid")
		case "$(readlink "/proc/$pid/exe")" in *" (deleted)") why="its binary changed" ;; esac
		printf '%s\0' "$@" | cmp -s - "/proc/$pid/cmdline" || why="its command line changed"
		if [ -z "$why" ]; then log "$name already running (pid $pid)"; return 0; fi
		log "restarting $name ($why)..."
		stop_running "$name"
	else
		log "starting $name..."
	fi
	# setsid execs in place (a background child of a script is not a group
	# leader), so $! is the component's own pid.
	setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$PIDS/$name.pid"
}
# wait_for NAME TIMEOUT_S DESCRIPTION CMD...: poll CMD until it succeeds; fail
# early if NAME's process died.
wait_for() {
	local name=$1 timeout=$2 what=$3; shift 3
	local deadline=$(( $(date +%s) + timeout ))
	until "$@" >/dev/null 2>&1; do
		running "$name" || die_log "$name" "$name exited while waiting for $what"
		[ "$(date +%s)" -lt "$deadline" ] || die_log "$name" "timed out after ${timeout}s waiting for $what"
		sleep 0.5
	done
}
port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }
check_port() { # check_port NAME PORT
	running "$1" || port_free "$2" || die "port $2 (for $1) is already in use: $(ss -Hltnp "sport = :$2" | head -1)"
}
# Ports must be free unless the component holding them is ours and running.
check_port etcd $ETCD_PORT
check_port etcd $ETCD_PEER_PORT
check_port kube-apiserver $APISERVER_PORT
check_port kubelet $KUBELET_PORT
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" --cache-dir "$STATE/kubectl-cache" "$@"; }

# ---------------------------------------------------------------- host preparation
# Record what the host looked like before, once (a second up must not record
# kubelet's changes as the "original" values). k8s-down.sh restores from these.
if [ ! -f "$STATE/host/sysctl.saved" ]; then
	# kubelet sets these (setupKernelTunables); bridge CNI may set ip_forward.
	for k in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
		kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward; do
		v=$(sysctl -n "$k" 2>/dev/null) && echo "$k=$v"
	done >"$STATE/host/sysctl.saved.tmp"
	mv "$STATE/host/sysctl.saved.tmp" "$STATE/host/sysctl.saved"
fi
if [ ! -f "$STATE/host/preexisting" ]; then
	# Host paths kubelet/containerd/CNI create outside STATE; down removes the
	# ones that did not exist before.
	for p in /var/lib/kubelet /var/log/containers /var/lib/cni /run/containerd/fifo /run/containerd/runc; do
		[ -e "$p" ] && echo "$p"
	done >"$STATE/host/preexisting"
	true
fi
if ! ip link show "$NODE_IF" >/dev/null 2>&1; then
	# some kernels lack the dummy driver: an empty bridge does too
	ip link add "$NODE_IF" type dummy 2>/dev/null || ip link add "$NODE_IF" type bridge ||
		die "cannot create interface $NODE_IF for the node IP"
fi
ip link set "$NODE_IF" up
ip addr show dev "$NODE_IF" | grep -qF " $NODE_IP/" || ip addr add "$NODE_IP/32" dev "$NODE_IF"

# ---------------------------------------------------------------- certificates
mkdir -p "$PKI"
# mkcert NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]: key + cert signed by the CA.
mkcert() {
	local n=$1 subj=$2 eku=$3 san=${4:-}
	[ -f "$PKI/$n.crt" ] && return 0
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$n.key" 2>/dev/null
	openssl req -new -key "$PKI/$n.key" -subj "$subj" -out "$PKI/$n.csr" 2>/dev/null
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$PKI/$n.ext"
	openssl x509 -req -in "$PKI/$n.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 3650 -extfile "$PKI/$n.ext" -out "$PKI/$n.crt" 2>/dev/null
	rm -f "$PKI/$n.csr" "$PKI/$n.ext"
}
if [ ! -f "$PKI/ca.crt" ]; then
	log "creating certificates in $PKI..."
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=paddock-k8s-ca" -days 3650 -out "$PKI/ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
fi
mkcert apiserver "/CN=kube-apiserver" serverAuth \
	"IP:127.0.0.1,IP:$NODE_IP,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
mkcert admin "/O=system:masters/CN=paddock-admin" clientAuth
mkcert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
mkcert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
mkcert kubelet-serving "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
if [ ! -f "$PKI/sa.key" ]; then
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
fi
chmod 600 "$PKI"/*.key

# mkkubeconfig FILE CERT_NAME: kubeconfig with embedded CA and client cert.
mkkubeconfig() {
	local f=$1 n=$2
	cat >"$f.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: paddock-k8s
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $n
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$n.crt")
    client-key-data: $(base64 -w0 "$PKI/$n.key")
contexts:
- name: paddock-k8s
  context: {cluster: paddock-k8s, user: $n, namespace: default}
current-context: paddock-k8s
EOF
	chmod 600 "$f.tmp"; mv "$f.tmp" "$f"
}
mkkubeconfig "$KUBECONFIG_ADMIN" admin
mkkubeconfig "$STATE/kubelet.kubeconfig" kubelet-client

# ---------------------------------------------------------------- etcd
start etcd /usr/bin/etcd --name "$NODE_NAME" --data-dir "$STATE/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
	--listen-metrics-urls "" --log-level warn
wait_for etcd 30 "etcd health" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

# ---------------------------------------------------------------- containerd (private instance)
mkdir -p "$STATE/cni/net.d" "$STATE/containerd"
cat >"$STATE/cni/net.d/10-$CNI_NET.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NET",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$STATE/cni/ipam"
      }
    }
  ]
}
EOF
# Own root/state/socket (dockerd's containerd is left alone); runc's state and
# netns mounts also kept under STATE. The loopback plugin is added by containerd.
cat >"$STATE/containerd/config.toml.new" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # root lacks CAP_SYS_RESOURCE here: without this every sandbox fails with
  # "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$STATE/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$STATE/cni/net.d"
    max_conf_num = 1
EOF
changed=; install_config "$STATE/containerd/config.toml" && changed="its config changed"
RESTART_WHY=$changed start containerd /usr/bin/containerd --config "$STATE/containerd/config.toml"
ctr_() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }
wait_for containerd 30 "containerd socket" ctr --address "$CTR_SOCK" version

# import IMAGE_TAR_OR_-: into the k8s.io namespace, where the CRI plugin sees it.
import_image() {
	ctr_ image import "$1" >>"$LOGS/images.log" 2>&1
}
for img in pause busybox; do
	ref=$PAUSE_IMAGE; [ $img = busybox ] && ref=$BUSYBOX_IMAGE
	if ! ctr_ image ls -q | grep -qxF "$ref"; then
		log "importing $ref..."
		import_image "$CACHE/images/$img.tar" || die_log images "importing $ref failed"
	fi
done

# ---------------------------------------------------------------- kube-apiserver
start kube-apiserver "$BIN/kube-apiserver" \
	--bind-address=127.0.0.1 --secure-port=$APISERVER_PORT --advertise-address=$NODE_IP \
	--etcd-servers=http://127.0.0.1:$ETCD_PORT \
	--endpoint-reconciler-type=none \
	--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--allow-privileged=true \
	--client-ca-file="$PKI/ca.crt" \
	--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
	--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
	--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority="$PKI/ca.crt" \
	--kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
	--service-cluster-ip-range=$SERVICE_CIDR \
	--profiling=false
wait_for kube-apiserver 90 "apiserver /readyz" kubectl get --raw /readyz

# ---------------------------------------------------------------- controller-manager, scheduler
# Controller-manager creates the `default` ServiceAccount and kube-root-ca.crt pods need.
# Its default of 20 API requests a second makes 50 claims made at once (a benchmark's
# 50 sandboxes) wait 6 s to be bound: the volume controller makes 4 writes a claim.
start kube-controller-manager "$BIN/kube-controller-manager" \
	--kubeconfig="$KUBECONFIG_ADMIN" --kube-api-qps=200 --kube-api-burst=400 \
	--authentication-kubeconfig="$KUBECONFIG_ADMIN" --authorization-kubeconfig="$KUBECONFIG_ADMIN" \
	--leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
	--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
	--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
	--profiling=false
start kube-scheduler "$BIN/kube-scheduler" \
	--kubeconfig="$KUBECONFIG_ADMIN" \
	--authentication-kubeconfig="$KUBECONFIG_ADMIN" --authorization-kubeconfig="$KUBECONFIG_ADMIN" \
	--leader-elect=false --bind-address=127.0.0.1 --secure-port=0 --profiling=false

# ---------------------------------------------------------------- storage
# No cloud disk, no CSI driver: localpv (internal/backend/kubernetes/k8stest/localpv)
# gives each claim of the default class its own directory under STATE/volumes, as a
# `local` volume pinned to this node (the kubelet applies the pod's fsGroup to it).
# Immediate binding: the claim is bound before its pod is scheduled, and the one node
# is the only choice anyway. Delete: a claim's directory goes with it.
mkdir -p "$STATE/volumes"
chmod 755 "$STATE/volumes"
start localpv "$LOCALPV" --kubeconfig="$KUBECONFIG_ADMIN" --dir="$STATE/volumes" --node="$NODE_NAME"
localpv_ready() { grep -qF "ready (pid $(cat "$PIDS/localpv.pid"))" "$LOGS/localpv.log"; }
wait_for localpv 30 "localpv to watch the claims" localpv_ready
kubectl apply -f - >/dev/null <<EOF || die "creating the StorageClass paddock-local failed"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: paddock-local
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: paddock.dev/local
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
# A RuntimeClass naming the default handler, for paddock's runtime_class option. (gVisor
# is not offered: Debian ships runsc without containerd-shim-runsc-v1, and runsc through
# runc's shim hangs starting the second container of a pod.)
kubectl apply -f - >/dev/null <<EOF || die "creating the RuntimeClass runc failed"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: runc
handler: runc
EOF

# ---------------------------------------------------------------- kubelet
mkdir -p "$STATE/kubelet" "$STATE/pod-logs"
cat >"$STATE/kubelet-config.yaml.new" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CTR_SOCK
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: AlwaysAllow          # test cluster: anyone with a CA-signed client cert
# cgroup v1 host, no systemd
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
podLogsDir: $STATE/pod-logs
makeIPTablesUtilChains: false
# Kubernetes has no per-pod process limit: the kubelet puts this one on every pod (the
# pids cgroup), and paddock's tests of the sandbox's process limit expect exactly 512.
podPidsLimit: 512
# never garbage-collect the imported images, never evict for a full disk
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
EOF
changed=; install_config "$STATE/kubelet-config.yaml" && changed="its config changed"
RESTART_WHY=$changed start kubelet "$BIN/kubelet" --config="$STATE/kubelet-config.yaml" \
	--kubeconfig="$STATE/kubelet.kubeconfig" --root-dir="$STATE/kubelet" \
	--hostname-override=$NODE_NAME --node-ip=$NODE_IP

node_ready() {
	[ "$(kubectl get node $NODE_NAME -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_for kubelet 120 "node $NODE_NAME Ready" node_ready
wait_for kube-controller-manager 60 "the default service account" kubectl -n default get serviceaccount default
wait_for kube-controller-manager 60 "configmap kube-root-ca.crt" kubectl -n default get configmap kube-root-ca.crt
running kube-scheduler || die_log kube-scheduler "kube-scheduler exited"

# ---------------------------------------------------------------- extra images
for name in "${LOAD_IMAGES[@]}"; do
	docker image inspect "$name" >/dev/null 2>&1 || die "--load-image $name: no such local docker image"
	log "loading docker image $name..."
	t=$(date +%s)
	docker save "$name" | import_image - || die_log images "loading $name failed"
	log "loaded $name in $(( $(date +%s) - t ))s"
done

log "cluster up in $(( $(date +%s) - T0 ))s; kubectl: $BIN/kubectl; logs: $LOGS; tear down: $(cd "$(dirname "$0")" && pwd)/k8s-down.sh $STATE"
echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
