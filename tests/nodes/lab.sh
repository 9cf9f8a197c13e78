#!/usr/bin/env bash
# Fake machines ("nodes") on this host, for tests that deploy Kubernetes
# clusters over SSH. Run as root; needs util-linux, iproute2 and what
# setup.sh installs (openssh-server; containerd and runc for deploys).
#
#   lab.sh up DIR COUNT [OWNER_PID]   prints "NAME IP PORT" per node on stdout
#   lab.sh down DIR                   removes everything the lab made
#
# A node is a network, mount, UTS, IPC, PID and cgroup namespace whose root
# is an overlay: lower is the host's root fs, upper a tmpfs, so whatever a
# deploy writes (packages' files included) stays in the node. Its PID 1 is
# systemd, as on a real machine, since deploys install services as units and
# drive them with systemctl and journalctl; sshd is the node's ssh.service.
# Only ssh.service is enabled in a node: its /etc/systemd/system starts empty
# (the host's enabled services stay off) and masks what a machine sharing
# the host's kernel and devices must not run (gettys, udev, time sync,
# kernel file systems). `up` returns once every node's sshd accepts
# connections and systemd is `running` (or `degraded`, logged with why).
#
# Nothing in a node can change the host: /proc/sys is read-only (except
# net/, which is per network namespace), /sys too, /dev is the node's own
# tmpfs with a few device nodes (/dev/kmsg read-only), and each node gets a
# cgroup of its own, named wasmco-lab-N-nodeI in every cgroup v1 hierarchy,
# under the cgroup `up` runs in, mounted read-write as the node's
# /sys/fs/cgroup/* (systemd and runc need that). containerd's overlay
# snapshots cannot sit on the overlay root, nor kubelet's volumes: a node's
# /var/lib/{containerd,kubelet,etcd} are directories of its tmpfs.
# No address goes into the host's network namespace: nodes hang off a bridge
# inside the lab's own network namespace, which the test joins with setns()
# to reach them.
#
# Lab N uses the subnet 10.250.N.0/24: bridge .1, nodeI .(10+I). DIR holds:
#   lab-id                        N
#   netns                         path of the lab's network namespace
#   id_ed25519[.pub], id_rsa[.pub]  client keys authorized for root on nodes
#   password                      root's password on every node
#   nodes/NAME/host_key.pub       the node's (only) SSH host key, ed25519
#   nodes/NAME/root               the node's merged root, mounted on the host
#   nodes/NAME/fs                 tmpfs: the overlay's upper and work dirs and
#                                 the node's /var/lib/{containerd,kubelet,etcd}
#   nodes/NAME/pid                host PID of the node's PID 1 (for nsenter)
#   nodes/NAME/log                output of the node's systemd (and its setup)
# /run/wasmco-lab/N records DIR and the owner PID; `up` first tears down
# labs whose owner has died, so a killed test leaves nothing behind for long.
set -euo pipefail

readonly REGISTRY=/run/wasmco-lab PREFIX=wasmco-lab

# Units a node must not run: it has no terminals of its own, and its
# devices, clock, kernel modules and kernel file systems are the host's.
readonly MASKED=(
  getty.target getty-static.service console-getty.service container-getty@.service
  systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
  systemd-udev-trigger.service systemd-udev-settle.service
  systemd-timesyncd.service systemd-pstore.service systemd-modules-load.service
  sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount
  sys-fs-fuse-connections.mount proc-sys-fs-binfmt_misc.automount
  proc-sys-fs-binfmt_misc.mount systemd-binfmt.service
  # The lab gives eth0 its address; nothing in the node is to reconfigure it.
  systemd-networkd.service systemd-networkd.socket networking.service
)

# Runs as PID 1 of a node, then execs systemd: $1 name, $2 merged root, $3
# file for the host PID, $4 the node's tmpfs, then CGROUP=HOSTDIR for each
# cgroup v1 hierarchy. It still sees the host's mounts, copied into its
# private mount namespace, and is already in the node's cgroups, which are
# the root of its cgroup namespace.
# shellcheck disable=SC2016 # expanded by the node's shell
readonly NODE_INIT='
set -euo pipefail
name=$1 root=$2 pidfile=$3 fs=$4
shift 4
# The host /proc is still mounted here, so this is our PID as the host sees it.
read -r hostpid _ </proc/self/stat
echo "$hostpid" >"$pidfile"
hostname "$name"
mount -t proc proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount -o remount,bind,ro "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,rw "$root/proc/sys/net"
# kubelet refuses to start unless it can set these global settings to what
# it wants: each node has its own copies, files of its tmpfs, already so.
mkdir "$fs/sysctl"
for setting in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 \
  kernel/panic_on_oops=1 kernel/keys/root_maxkeys=1000000 \
  kernel/keys/root_maxbytes=25000000; do
  key=${setting%=*}
  [[ -e $root/proc/sys/$key ]] || continue
  echo "${setting#*=}" >"$fs/sysctl/${key//\//.}"
  mount --bind "$fs/sysctl/${key//\//.}" "$root/proc/sys/$key"
done
# Some kernels have no magic SysRq; where there is one, it is the host one.
if [[ -e $root/proc/sysrq-trigger ]]; then
  mount --bind "$root/proc/sysrq-trigger" "$root/proc/sysrq-trigger"
  mount -o remount,bind,ro "$root/proc/sysrq-trigger"
fi
mount -t sysfs -o ro sysfs "$root/sys"
# systemd (legacy cgroup mode) and runc find the node cgroups where a host
# has its hierarchies; the tmpfs holding them is read-only, as on a host.
cg=$root/sys/fs/cgroup
mount -t tmpfs -o mode=755,nosuid,nodev,noexec cgroup "$cg"
for spec; do
  ctrl=${spec%%=*}
  mkdir "$cg/$ctrl"
  mount --bind "${spec#*=}" "$cg/$ctrl"
  # Controllers mounted together (cpu,cpuacct) are found by each name too.
  if [[ $ctrl == *,* ]]; then
    for c in ${ctrl//,/ }; do ln -s "$ctrl" "$cg/$c"; done
  fi
done
mount -o remount,ro "$cg"
# A /dev of its own: the host /dev has terminals a getty or udev could take.
dev=$root/dev
mount -t tmpfs -o mode=755,nosuid dev "$dev"
mknod -m 666 "$dev/null" c 1 3
mknod -m 666 "$dev/zero" c 1 5
mknod -m 666 "$dev/full" c 1 7
mknod -m 666 "$dev/random" c 1 8
mknod -m 666 "$dev/urandom" c 1 9
mknod -m 666 "$dev/tty" c 5 0
# kubelet reads the kernel log; nothing in a node is to write to it.
touch "$dev/kmsg"
mount --bind /dev/kmsg "$dev/kmsg"
mount -o remount,bind,ro "$dev/kmsg"
mkdir "$dev/pts" "$dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$dev/pts"
ln -s pts/ptmx "$dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$dev/shm"
ln -s /proc/self/fd "$dev/fd"
ln -s /proc/self/fd/0 "$dev/stdin"
ln -s /proc/self/fd/1 "$dev/stdout"
ln -s /proc/self/fd/2 "$dev/stderr"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
for d in containerd kubelet etcd; do
  mount --bind "$fs/var/$d" "$root/var/lib/$d"
done
# pivot_root rather than chroot: detaching the old root drops the copies of
# host mounts (overlays and netns of other labs) made with this namespace,
# which would otherwise stay alive until this node dies.
cd "$root"
pivot_root . tmp
umount -l /tmp
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
cd /
# container= tells systemd it has no hardware to manage. Nothing in a node
# may load kernel modules, set the clock, reboot or poke at raw I/O: those
# reach the host, so the capabilities are gone from the bounding set (the
# modprobe of a deploy then fails, as on a machine without the module).
exec setpriv --bounding-set=-sys_module,-sys_rawio,-sys_time,-sys_boot \
  env -i container=wasmco-lab \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /lib/systemd/systemd --unit=multi-user.target
'

die() { echo "lab.sh: $*" >&2; exit 1; }
log() { echo "lab.sh: $*" >&2; }

# Runs "$@" holding the registry lock, so concurrent ups and downs do not
# pick the same lab id or tear down the same lab twice.
locked() {
  mkdir -p "$REGISTRY"
  { flock 9; "$@"; } 9>"$REGISTRY/lock"
}

# Mount points under $1 in the host's mount namespace, deepest first.
mounts_under() {
  findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r
}

# Killing the node's PID 1 (in this netns) kills its whole PID namespace.
kill_netns() {
  local ns=$1 pids _
  for _ in $(seq 100); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086 # one PID per word
    kill -9 $pids 2>/dev/null || true
    sleep 0.1
  done
  die "processes in netns $ns survive SIGKILL: $pids"
}

# "MOUNTPOINT CGROUP" for each cgroup v1 hierarchy: where the host mounts it
# and the cgroup this script runs in. Nodes nest in the caller's cgroups, so
# whatever accounts for or limits the caller covers its nodes too.
v1_hierarchies() {
  local _ ctrls path mnt
  while IFS=: read -r _ ctrls path; do
    [[ -n $ctrls ]] || continue # 0::/ is cgroup v2, which nodes do not use
    mnt=$(findmnt -rn -t cgroup -O "${ctrls%%,*}" -o TARGET | head -n 1)
    [[ -n $mnt ]] || die "cgroup hierarchy $ctrls is not mounted"
    echo "$mnt ${path%/}"
  done </proc/self/cgroup
}

# The node cgroups of lab $1, whichever cgroup its `up` ran in.
lab_cgroups() {
  local mnt
  for mnt in $(findmnt -rn -t cgroup -o TARGET); do
    find "$mnt" -maxdepth 6 -type d -name "$PREFIX-*" -prune -name "$PREFIX-$1-node*" -print
  done
}

# Kills what is left in cgroup $1 and below, then removes them, deepest first.
remove_cgroup() {
  local cg=$1 pids _
  for _ in $(seq 100); do
    # A frozen task does not die: thaw whatever a pod left frozen.
    find "$cg" -name freezer.state -exec sh -c 'for f; do echo THAWED >"$f"; done' - {} + 2>/dev/null || true
    pids=$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null || true)
    if [[ -z $pids ]]; then
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [[ -d $cg ]] || return 0
    else
      # shellcheck disable=SC2086 # one PID per word
      kill -9 $pids 2>/dev/null || true
    fi
    sleep 0.1
  done
  die "cannot remove cgroup $cg; processes left: ${pids:-none}"
}

teardown() {
  local id=$1 dir=$2 ns m cg pid _
  for ns in $(ip netns list | awk -v p="$PREFIX-$id-" 'index($1, p) == 1 { print $1 }'); do
    kill_netns "$ns"
    ip netns del "$ns"
  done
  # Pods run in network namespaces of their own but in the node's cgroups.
  for cg in $(lab_cgroups "$id"); do remove_cgroup "$cg"; done
  # A registry entry may outlive its lab; never touch a DIR reused by another.
  if [[ -d $dir && $(cat "$dir/lab-id" 2>/dev/null) == "$id" ]]; then
    # Killed, a node's PID 1 stays a zombie until the host's init reaps it.
    for pid in "$dir"/nodes/*/pid; do
      [[ -f $pid ]] || continue
      read -r pid <"$pid"
      for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
    done
    for m in $(mounts_under "$dir"); do umount "$m"; done
    [[ -z $(mounts_under "$dir") ]] || die "mounts remain under $dir"
    rm -rf -- "$dir"
  fi
  if [[ -e /run/netns/$PREFIX-$id ]]; then ip netns del "$PREFIX-$id"; fi
  rm -f "$REGISTRY/$id"
}

# A zombie owner counts as dead: it was killed but not yet reaped.
owner_alive() {
  [[ $(ps -o stat= -p "$1" 2>/dev/null) == [^Z]* ]]
}

collect_garbage() {
  local entry dir owner
  for entry in "$REGISTRY"/[0-9]*; do
    [[ -f $entry ]] || continue
    read -r dir owner <"$entry"
    owner_alive "$owner" && continue
    log "removing stale lab ${entry##*/} ($dir) of dead owner $owner"
    teardown "${entry##*/}" "$dir"
  done
}

# Sets `id` to the lowest free lab number and registers the lab.
allocate() {
  local dir=$1 owner=$2 n
  for n in $(seq 254); do
    [[ -e $REGISTRY/$n || -e /run/netns/$PREFIX-$n ]] && continue
    echo "$dir $owner" >"$REGISTRY/$n"
    echo "$n" >"$dir/lab-id"
    id=$n
    return 0
  done
  die "no free lab id (254 labs registered)"
}

# Writes the node's identity, sshd config and credentials into its overlay,
# from the host: the host's own /etc stays untouched as it is the lower layer.
configure_root() {
  local dir=$1 name=$2 ip=$3 hosts=$4 root=$1/nodes/$2/root
  # Whiteouts: a node must not serve the host's private host keys.
  rm -f "$root"/etc/ssh/ssh_host_*
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$root/etc/ssh/ssh_host_ed25519_key"
  cp "$root/etc/ssh/ssh_host_ed25519_key.pub" "$dir/nodes/$name/host_key.pub"
  cat >"$root/etc/ssh/sshd_config" <<EOF
Port 22
ListenAddress $ip
HostKey /etc/ssh/ssh_host_ed25519_key
PidFile /run/sshd.pid
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
# Deploy tools open many connections and sessions at once.
MaxStartups 100
MaxSessions 100
Subsystem sftp internal-sftp
EOF
  # The host's own /root/.ssh, if it has one, shows through the overlay.
  mkdir -p "$root/root/.ssh"
  chmod 700 "$root/root/.ssh"
  cat "$dir/id_ed25519.pub" "$dir/id_rsa.pub" >"$root/root/.ssh/authorized_keys"
  chmod 600 "$root/root/.ssh/authorized_keys"
  echo "$name" >"$root/etc/hostname"
  echo "$hosts" >"$root/etc/hosts"
  echo "root:$(cat "$dir/password")" | chroot "$root" /usr/sbin/chpasswd
  # Machines tell each other apart by it (journald, kubelet's node info).
  systemd-id128 new >"$root/etc/machine-id"
  # Removed and made anew, the directory is opaque in the overlay: none of
  # the host's enabled services (databases, timers, containerd...) start in
  # a node, only ssh.service; the deploy enables the rest.
  local units=$root/etc/systemd/system unit
  rm -rf "$units"
  mkdir -p "$units/multi-user.target.wants"
  ln -s /lib/systemd/system/ssh.service "$units/multi-user.target.wants/ssh.service"
  ln -s /lib/systemd/system/ssh.service "$units/sshd.service"
  for unit in "${MASKED[@]}"; do ln -s /dev/null "$units/$unit"; done
  mkdir -p "$root/var/lib/containerd" "$root/var/lib/kubelet" "$root/var/lib/etcd"
}

# Makes the node's cgroup in each v1 hierarchy; prints "NAME=DIR" for each,
# NAME being the hierarchy's directory in /sys/fs/cgroup.
make_cgroups() {
  local name=$1 mnt parent cg
  while read -r mnt parent; do
    cg=$mnt$parent/$name
    mkdir "$cg"
    # A new cpuset has no CPUs nor memory nodes, and takes no task until given some.
    if [[ -f $cg/cpuset.cpus ]]; then
      cat "$mnt$parent/cpuset.cpus" >"$cg/cpuset.cpus"
      cat "$mnt$parent/cpuset.mems" >"$cg/cpuset.mems"
    fi
    echo "${mnt##*/}=$cg"
  done < <(v1_hierarchies)
}

start_node() {
  local dir=$1 id=$2 i=$3 hosts=$4
  local name=node$i ns=$PREFIX-$id-node$i ip=10.250.$id.$((10 + i))
  local nd=$dir/nodes/node$i
  mkdir -p "$nd/fs" "$nd/root"
  # The upper dir must not be on the lower's (root) fs: overlay refuses that.
  mount -t tmpfs -o mode=755 "$ns" "$nd/fs"
  mkdir "$nd/fs/upper" "$nd/fs/work"
  mount -t overlay "$ns" -o "lowerdir=/,upperdir=$nd/fs/upper,workdir=$nd/fs/work" "$nd/root"
  configure_root "$dir" "$name" "$ip" "$hosts"
  ip netns add "$ns"
  ip -n "$PREFIX-$id" link add "veth$i" type veth peer name eth0 netns "$ns"
  ip -n "$PREFIX-$id" link set "veth$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "10.250.$id.1"
  mkdir -p "$nd/fs/var/containerd" "$nd/fs/var/kubelet" "$nd/fs/var/etcd"
  local -a cgroups
  mapfile -t cgroups < <(make_cgroups "$ns")
  # Into the node's cgroups before unshare, so that they are the root of its
  # cgroup namespace. setsid and no inherited stdout: the node must outlive
  # `up` and not hold open the pipe the caller reads the node list from.
  (
    for cg in "${cgroups[@]}"; do echo "$BASHPID" >"${cg#*=}/cgroup.procs"; done
    exec setsid nsenter --net="/run/netns/$ns" \
      unshare --mount --uts --ipc --pid --cgroup --fork --propagation private \
      bash -c "$NODE_INIT" node-init "$name" "$nd/root" "$nd/pid" "$nd/fs" "${cgroups[@]}"
  ) </dev/null >"$nd/log" 2>&1 &
  disown
}

# Waits until node $3's sshd accepts connections and its systemd has booted.
wait_node() {
  local dir=$1 id=$2 i=$3 ip=10.250.$2.$((10 + $3)) state failed
  local nd=$1/nodes/node$3 deadline=$((SECONDS + 60))
  until nsenter --net="/run/netns/$PREFIX-$id" timeout 2 \
    bash -c "exec 3<>/dev/tcp/$ip/22" 2>/dev/null; do
    # Once it has written its PID, a node with no process left has died.
    if ((SECONDS >= deadline)) ||
      [[ -f $nd/pid && -z $(ip netns pids "$PREFIX-$id-node$i" 2>/dev/null) ]]; then
      die "sshd of node$i ($ip) not listening; log tail: $(tail -n 5 "$nd/log")"
    fi
    sleep 0.2
  done
  state=$(in_node "$nd" timeout $((deadline - SECONDS + 1)) \
    systemctl is-system-running --wait 2>&1 || true)
  case $state in
    running) ;;
    degraded)
      failed=$(in_node "$nd" systemctl list-units --failed --plain --no-legend | awk '{ print $1 }')
      log "node$i: systemd degraded, failed units: ${failed//$'\n'/ }" ;;
    *) die "node$i: systemd is ${state:-not answering}; log tail: $(tail -n 5 "$nd/log")" ;;
  esac
}

# Runs "$@" in the node whose directory is $1, as a process of that machine.
in_node() {
  nsenter --target "$(cat "$1/pid")" --mount --uts --ipc --net --pid --cgroup --root --wd "${@:2}"
}

cmd_up() {
  local dir=$1 count=$2 owner=${3:-$PPID} hosts i
  [[ $dir == /* && $dir != *[[:space:]]* ]] || die "DIR must be an absolute path without spaces"
  if [[ ! $count =~ ^[1-9][0-9]*$ ]] || ((count > 200)); then die "COUNT must be 1..200"; fi
  owner_alive "$owner" || die "owner process $owner is not running"
  dir=$(realpath -m "$dir")
  if [[ -e $dir ]] && [[ ! -d $dir || -n $(ls -A "$dir") ]]; then
    die "$dir exists and is not an empty directory"
  fi
  mkdir -p "$dir"
  id=
  locked collect_garbage
  locked allocate "$dir" "$owner"
  # shellcheck disable=SC2064 # expand now: the locals are gone when it runs
  trap "teardown $id $dir" EXIT
  trap 'exit 1' INT TERM HUP
  log "lab $id in $dir: $count nodes on 10.250.$id.0/24"

  ip netns add "$PREFIX-$id"
  ip -n "$PREFIX-$id" link set lo up
  ip -n "$PREFIX-$id" link add br0 type bridge
  ip -n "$PREFIX-$id" addr add "10.250.$id.1/24" dev br0
  ip -n "$PREFIX-$id" link set br0 up
  echo "/run/netns/$PREFIX-$id" >"$dir/netns"

  ssh-keygen -q -t ed25519 -N '' -C "wasmco-lab-$id" -f "$dir/id_ed25519"
  ssh-keygen -q -t rsa -b 3072 -m PEM -N '' -C "wasmco-lab-$id" -f "$dir/id_rsa"
  (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+' >"$dir/password")

  hosts=$'127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback'
  for ((i = 1; i <= count; i++)); do hosts+=$'\n'"10.250.$id.$((10 + i)) node$i"; done
  for ((i = 1; i <= count; i++)); do start_node "$dir" "$id" "$i" "$hosts"; done
  for ((i = 1; i <= count; i++)); do wait_node "$dir" "$id" "$i"; done

  trap - EXIT INT TERM HUP
  for ((i = 1; i <= count; i++)); do echo "node$i 10.250.$id.$((10 + i)) 22"; done
}

cmd_down() {
  local dir
  dir=$(realpath -m "$1")
  if [[ -f $dir/lab-id ]]; then
    locked teardown "$(cat "$dir/lab-id")" "$dir"
  elif [[ -d $dir ]]; then
    rmdir "$dir" 2>/dev/null || die "$dir is not a lab (no lab-id) and not empty"
  fi
}

[[ $EUID -eq 0 ]] || die "must run as root"
case ${1:-} in
  up) [[ $# -eq 3 || $# -eq 4 ]] || die "usage: lab.sh up DIR COUNT [OWNER_PID]"; cmd_up "${@:2}" ;;
  down) [[ $# -eq 2 ]] || die "usage: lab.sh down DIR"; cmd_down "$2" ;;
  *) die "usage: lab.sh up DIR COUNT [OWNER_PID] | lab.sh down DIR" ;;
esac
