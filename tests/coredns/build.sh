#!/usr/bin/env bash
# Builds CoreDNS (main.go: the plugins wasmco's Corefile uses) from the
# module pinned in this directory's go.mod and go.sum, static, for the
# CoreDNS image images.sh makes. Kept in ~/.cache/wasmco-coredns/<hash of
# the inputs> (about 2 minutes the first time on two cores). Prints the
# binary's path.
set -euo pipefail
cd "$(dirname "$0")"

export GOMODCACHE="${GOMODCACHE:-$HOME/.cache/go-mod}"
export GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
export GOTOOLCHAIN=local
export GOFLAGS=-mod=readonly

key=$(cat go.mod go.sum build.sh main.go | sha256sum | cut -c1-16)
out="$HOME/.cache/wasmco-coredns/$key"

if [ ! -x "$out/coredns" ]; then
	echo "building CoreDNS into $out" >&2
	rm -rf "$out.partial"
	mkdir -p "$out.partial"
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial/coredns" .
	rm -rf "$out"
	mv "$out.partial" "$out"
	find "$(dirname "$out")" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
fi
echo "$out/coredns"
