#!/usr/bin/env bash
# Builds the real Kubernetes parts the end-to-end tests run rsync against
# (kube-apiserver, a single-member etcd, and kubectl for the benchmark), and
# those the cluster-deployment tests install on their nodes (kubelet,
# kube-controller-manager, kube-scheduler, kube-proxy, and etcd and etcdctl as its
# release runs it), from the modules pinned in this directory's go.mod and
# go.sum.
#
# With a directory argument (tests/kube-next), builds that module's cmd/*
# instead: the same parts a minor version on, for the upgrade tests.
#
# The binaries go to ~/.cache/wasmco-kube/<module>/<hash of the inputs>,
# outside the clone, so only the first build on a machine pays for it
# (about 10 minutes on two cores). Prints that directory.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "${1:-$(dirname "$0")}"

export GOMODCACHE="${GOMODCACHE:-$HOME/.cache/go-mod}"
export GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
# The Go on the machine builds it; never a toolchain download.
export GOTOOLCHAIN=local
export GOFLAGS=-mod=readonly

version=$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' go.mod)
key=$(cat go.mod go.sum "$script" cmd/*/main.go $(ls internal/*/*.go 2>/dev/null) | sha256sum | cut -c1-16)
out="$HOME/.cache/wasmco-kube/$(basename "$PWD")/$key"
binaries=($(ls cmd))

built() {
	for binary in "${binaries[@]}"; do
		[ -x "$out/$binary" ] || return 1
	done
}

if ! built; then
	echo "building ${binaries[*]} $version into $out" >&2
	major=${version#v}
	minor=${major#*.}
	minor=${minor%%.*}
	major=${major%%.*}
	stamp="-X k8s.io/component-base/version.gitVersion=$version"
	stamp+=" -X k8s.io/component-base/version.gitMajor=$major"
	stamp+=" -X k8s.io/component-base/version.gitMinor=$minor"
	stamp+=" -X k8s.io/client-go/pkg/version.gitVersion=$version"
	rm -rf "$out.partial"
	mkdir -p "$out.partial"
	go build -trimpath -ldflags "-s -w $stamp" -o "$out.partial/" ./cmd/...
	rm -rf "$out"
	mv "$out.partial" "$out"
	# Earlier pins' binaries: 200 MB each, never used again.
	find "$(dirname "$out")" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
fi
echo "$out"
