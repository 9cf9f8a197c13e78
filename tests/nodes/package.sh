#!/usr/bin/env bash
# Builds the package archive Eggo's deploy file names in
# install.package-source, the way Eggo lays one out (bin/, image/, file/),
# from the Kubernetes and etcd binaries tests/kube/build.sh makes, the
# images images.sh makes and lab-addon.yaml (a `yaml` package). Cached in ~/.cache/wasmco-nodes/packages keyed by
# its inputs; prints the archive's path.
set -euo pipefail
cd "$(dirname "$0")"

# `package.sh next` packs tests/kube-next's Kubernetes (a minor version on,
# for the upgrade tests) with the same etcd.
kube=$(bash ../kube/build.sh)
parts=$kube
if [ "${1:-}" = next ]; then
	parts=$(bash ../kube/build.sh ../kube-next)
fi
images=$(bash images.sh)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/wasmco-nodes/packages/${1:-current}"
key=$( { echo "$kube" "$parts" "$images"; cat package.sh lab-addon.yaml; } | sha256sum | cut -c1-16)
archive="$cache/$key/packages-amd64.tar.gz"

if [ ! -f "$archive" ]; then
	echo "packing the node archive into $archive" >&2
	rm -rf "$cache/$key.partial"
	stage="$cache/$key.partial/stage"
	mkdir -p "$stage/bin" "$stage/image" "$stage/file"
	for binary in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
		ln "$parts/$binary" "$stage/bin/$binary" 2>/dev/null || cp "$parts/$binary" "$stage/bin/$binary"
	done
	# etcd as its release runs it; tests/kube's own `etcd` is a test store.
	cp "$kube/etcd-server" "$stage/bin/etcd"
	cp "$kube/etcdctl" "$stage/bin/etcdctl"
	cp "$images/busybox.tar" "$images/pause.tar" "$images/coredns.tar" "$stage/image/"
	cp lab-addon.yaml "$stage/file/"
	# Fast compression: the archive is made once and unpacked on each node.
	tar -C "$stage" -cf - bin image file | gzip -1 >"$cache/$key.partial/packages-amd64.tar.gz"
	rm -rf "$stage"
	find "$cache" -mindepth 1 -maxdepth 1 ! -name "$key.partial" -exec rm -rf {} +
	mv "$cache/$key.partial" "$cache/$key"
fi
echo "$archive"
