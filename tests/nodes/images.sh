#!/usr/bin/env bash
# Builds the two container images the node tests use, without any registry
# (none is reachable from the test machines), and prints the directory
# holding them as docker-archive tarballs, for `ctr -n k8s.io images import`:
#
#   busybox.tar   localhost/busybox:local  Debian's static busybox, its applets
#                                          linked in /bin; runs `sh` by default
#   pause.tar     localhost/pause:local    pause.c, the pods' sandbox process
#   coredns.tar   coredns/coredns:VERSION  tests/coredns's CoreDNS, under the
#                                          name Eggo's CoreDNS pods ask for
#
# The directory is in the user's cache, named after a hash of this script,
# pause.c, the busybox package and the CoreDNS binary, so a change to any of
# them builds anew. Needs what setup.sh installs (busybox-static, umoci,
# skopeo, gcc) and Go for CoreDNS.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly here
readonly CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/wasmco-nodes/images

die() { echo "images.sh: $*" >&2; exit 1; }

# Makes image $2 in OCI layout $1 from the directory tree $3, with the
# umoci config options that follow, and writes it to $4 as a
# docker-archive named $5.
build_image() {
  local layout=$1 name=$2 tree=$3 tarball=$4 reference=$5 bundle
  shift 5
  bundle=$(dirname "$layout")/bundle-$name
  umoci new --image "$layout:$name"
  umoci unpack --image "$layout:$name" "$bundle" >/dev/null
  cp -a "$tree/." "$bundle/rootfs/"
  umoci repack --image "$layout:$name" "$bundle"
  umoci config --image "$layout:$name" --author wasmco-tests \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
  # --insecure-policy: the host's signature policy has no say over an image
  # that never leaves this machine.
  skopeo --insecure-policy copy -q "oci:$layout:$name" \
    "docker-archive:$tarball:$reference"
}

build() {
  local out=$1 work=$2
  umoci init --layout "$work/oci"

  mkdir -p "$work/busybox/bin"
  cp /bin/busybox "$work/busybox/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [[ $applet == busybox ]] || ln -s busybox "$work/busybox/bin/$applet"
  done
  # Like the registry's busybox: no entrypoint, `sh` as the command, so a
  # pod's `command:` and `ctr run IMAGE ID CMD...` run what they name.
  build_image "$work/oci" busybox "$work/busybox" "$out/busybox.tar" localhost/busybox:local \
    --config.cmd sh

  mkdir -p "$work/pause"
  gcc -static -Os -s -Wall -Wextra -Werror -o "$work/pause/pause" "$here/pause.c"
  build_image "$work/oci" pause "$work/pause" "$out/pause.tar" localhost/pause:local \
    --config.entrypoint /pause

  mkdir -p "$work/coredns"
  cp "$coredns" "$work/coredns/coredns"
  build_image "$work/oci" coredns "$work/coredns" "$out/coredns.tar" \
    "coredns/coredns:$coredns_version" --config.entrypoint /coredns
}

main() {
  local key dir work
  coredns=$(bash "$here/../coredns/build.sh")
  coredns_version=$(sed -n 's/^require github.com\/coredns\/coredns v\([0-9.]*\)$/\1/p' \
    "$here/../coredns/go.mod")
  [[ -n $coredns_version ]] || die "no CoreDNS version in tests/coredns/go.mod"
  key=$(cat "${BASH_SOURCE[0]}" "$here/pause.c" "$coredns" <(dpkg-query -W busybox-static) |
    sha256sum | cut -c1-16)
  dir=$CACHE/$key
  if [[ ! -f $dir/coredns.tar ]]; then
    if ! command -v umoci >/dev/null || ! command -v skopeo >/dev/null || [[ ! -x /bin/busybox ]]; then
      die "umoci, skopeo or busybox-static missing: run tests/nodes/setup.sh"
    fi
    mkdir -p "$CACHE"
    work=$(mktemp -d "$CACHE/.build.XXXXXX")
    # shellcheck disable=SC2064 # expand now: $work is local
    trap "rm -rf -- '$work'" EXIT
    mkdir "$work/out"
    build "$work/out" "$work" >&2
    # Whole or not at all; a concurrent build may have won the race.
    mv -T "$work/out" "$dir" 2>/dev/null || [[ -f $dir/coredns.tar ]] ||
      die "could not move the images into $dir"
    # Builds for older versions of this script are of no more use.
    find "$CACHE" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name '.build.*' \
      -exec rm -rf -- {} +
  fi
  echo "$dir"
}

main
