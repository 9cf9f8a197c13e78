#!/usr/bin/env bash
# Installs, from Debian's packages, what tests/nodes/lab.sh, images.sh and the
# node tests need on this host. The nodes see these files through their
# overlay (its lower layer is the host's root), so installing here is
# installing on every node. Fast and silent when all is there already.
#
# Packages must not start their services on this host (containerd, sshd):
# the nodes run them, each under its own systemd. policy-rc.d exiting 101
# tells invoke-rc.d and deb-systemd-invoke not to start anything.
set -euo pipefail

readonly PACKAGES=(
  openssh-server                # sshd on every node
  containerd runc               # the container runtime the deploy configures
  containernetworking-plugins   # CNI bridge, host-local, loopback in /usr/lib/cni
  busybox-static                # the busybox test image's only binary
  iptables conntrack socat      # what kubelet and kube-proxy call on a node
  umoci skopeo                  # images.sh builds images without a registry
  gcc libc6-dev                 # images.sh compiles the pause binary statically
)
readonly POLICY=/usr/sbin/policy-rc.d

# Names of PACKAGES not fully installed, one a line.
missing() {
  # dpkg-query fails for packages it never heard of; they are missing too.
  local installed
  installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$1 == "ii" { print $2 }' || true)
  comm -23 <(printf '%s\n' "${PACKAGES[@]}" | sort) <(sort <<<"$installed")
}

install() {
  local -a wanted=("$@")
  # Only a policy we put there is ours to remove: the host may have its own.
  if [[ ! -e $POLICY ]]; then
    printf '#!/bin/sh\n# tests/nodes/setup.sh: start no service while installing\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    trap 'rm -f "$POLICY"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Package lists may be missing or stale on a fresh machine: update once then.
  if ! apt-get install -y -qq --no-install-recommends "${wanted[@]}" >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${wanted[@]}" >/dev/null
  fi
}

[[ $EUID -eq 0 ]] || { echo "setup.sh: must run as root" >&2; exit 1; }
# Tests run this from several threads at once: one install at a time, so
# neither dpkg's lock nor another run's removal of the policy gets in the way.
exec 9>/run/wasmco-lab-setup.lock
flock 9
mapfile -t todo < <(missing)
if ((${#todo[@]})); then
  echo "setup.sh: installing ${todo[*]}" >&2
  install "${todo[@]}"
fi
