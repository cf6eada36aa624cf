# `cargo xtask hosts up`, in the lab's guest: boots one "host" per line of
# $run/hosts (NAME ADDRESS GUEST_PORT), each a real systemd as PID 1 of its
# own namespaces (mount, PID, UTS, IPC, cgroup, network) on a fresh overlay
# of the guest's root, its eth0 on the bridge `lan` (192.168.100.1/24 here),
# its sshd reachable from the machine through QEMU's forwarded GUEST_PORT
# (DNAT to ADDRESS:22). Reports progress on stdout, writes $run/ready once
# every host's systemd has finished booting, then keeps the guest up for
# TIMEOUT seconds (`cargo xtask hosts down` ends it sooner).
#
# Usage: hosts.sh up RUN TIMEOUT
# (internally, `hosts.sh boot RUN NAME` then `hosts.sh stage RUN NAME` are
# PID 1 of a host's namespaces until it execs systemd).
set -u

mode="$1"
run="$2"
repo="$(pwd)"
release="$(uname -r)"
hosts=/run/fulcrum-hosts
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

uptime() { cut -d' ' -f1 /proc/uptime; }
say() { echo "[$(uptime)] $*"; }
fail() {
    say "error: $*"
    echo "$*" > "$run/failed"
    exit 1
}

# This root is a development machine: whatever it enabled under /etc
# (keepalived, etcd, bird, postgresql, timers, a getty...) is disabled in each
# host (prepare_root), so a host boots as a fresh server with only sshd, and
# a play can still enable and start any of them. These units are masked:
# their packages or systemd's own targets (under /lib, not disabled that way)
# pull them in, and in a container they fail (API filesystems on a read-only
# /sys, a console getty on a file) or waste time (timers, NTP, modprobe@
# for modules that are the guest kernel's business). user@.service too: each
# first ssh login would start root's own systemd (logind holds the login
# until it is up), 4 to 11 s under emulation; the hosts are managed, not
# logged in to, and logins still get their logind session.
masked_units="
user@.service
modprobe@.service
getty-static.service
console-getty.service
systemd-networkd-wait-online.service
e2scrub_reap.service
e2scrub_all.timer
fstrim.timer
apt-daily.timer
apt-daily-upgrade.timer
man-db.timer
dpkg-db-backup.timer
systemd-pstore.service
systemd-timesyncd.service
sys-kernel-debug.mount
sys-kernel-tracing.mount
sys-kernel-config.mount
sys-fs-fuse-connections.mount
proc-sys-fs-binfmt_misc.automount
"

# Prepares NAME's root: an overlay whose lower layer is the guest's root (its
# own tmpfs holds the upper layer, so hosts share nothing they write), with
# the files that make it a distinct machine.
prepare_root() {
    name="$1"
    address="$2"
    layers="$hosts/$name"
    root="$layers/root"
    mkdir -p "$layers"
    mount -t tmpfs -o mode=0755 tmpfs "$layers" || fail "$name: cannot mount its tmpfs"
    mkdir -p "$layers/upper" "$layers/work" "$root"
    # The guest's root is itself an overlay (9p under tmpfs): overlayfs
    # stacks two deep, which is as deep as this goes.
    mount -t overlay -o "lowerdir=/,upperdir=$layers/upper,workdir=$layers/work" overlay "$root" \
        || fail "$name: cannot mount its overlay"
    echo "$name" > "$root/etc/hostname"
    # systemd would write a fresh one at each boot if missing; tools that
    # key on it (journald, DHCP client identifiers) want them distinct.
    od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > "$root/etc/machine-id"
    echo >> "$root/etc/machine-id"
    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        cat "$run/etc-hosts"
    } > "$root/etc/hosts"
    # Disabled, not masked: whatever the machine enabled, a host starts
    # without (a play may enable it), but sshd. System V scripts count: the
    # start links in /etc/rc[2-5].d make systemd's generator enable them
    # (ipvsadm's, for one, which does nothing but take seconds). They become
    # stop links, as `update-rc.d NAME disable` leaves them: `systemctl
    # enable` of such a service runs `update-rc.d NAME enable`, which fails
    # ("no runlevel symlinks to modify") where there is no link at all
    # (evrardjp's role enables keepalived so).
    find "$root/etc/systemd/system" -path '*.wants/*' -exec rm -f {} +
    for link in "$root"/etc/rc[2-5].d/S*; do
        [ -L "$link" ] || continue
        service="${link##*/S[0-9][0-9]}"
        mv "$link" "${link%/*}/K01$service"
    done
    find "$root"/etc/rcS.d -name 'S*' -exec rm -f {} +
    mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
    ln -sfn /lib/systemd/system/ssh.service \
        "$root/etc/systemd/system/multi-user.target.wants/ssh.service"
    for unit in $masked_units; do
        ln -sfn /dev/null "$root/etc/systemd/system/$unit"
    done
    mkdir -p "$root/lib/modules/$release"
}

# The host's link: a veth pair, one end on the bridge, the other eth0 in
# the host's network namespace.
prepare_network() {
    name="$1"
    address="$2"
    index="$3"
    ip netns add "$name" || fail "$name: cannot create its network namespace"
    ip link add "lanport$index" type veth peer name eth0 netns "$name" \
        || fail "$name: cannot create its link"
    ip link set "lanport$index" master lan up
    ip -n "$name" link set lo up
    ip -n "$name" address add "$address/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" route add default via 192.168.100.1
}

# PID 1 of NAME's new namespaces (but the cgroup one, not made yet).
boot() {
    name="$1"
    root="$hosts/$name/root"
    # Into the host's own cgroup before its cgroup namespace is made, so
    # that namespace's root is that cgroup: systemd then owns the subtree.
    echo 0 > "/sys/fs/cgroup/fulcrum-$name/cgroup.procs" || exit 1
    exec unshare --cgroup /bin/sh "$0" stage "$run" "$name"
}

stage() {
    name="$1"
    root="$hosts/$name/root"
    hostname "$name"
    # root's home as on a fresh server. This machine's runs pyenv's setup
    # from .bashrc, which bash reads even for ssh's non-interactive commands:
    # seconds per command under emulation, and its python3 first in PATH.
    mount -t tmpfs -o mode=0700 tmpfs "$root/root" || exit 1
    cp -a /etc/skel/. "$root/root/"
    mkdir -m 700 "$root/root/.ssh"
    cp "$run/authorized_keys" "$root/root/.ssh/authorized_keys"
    chmod 600 "$root/root/.ssh/authorized_keys"
    # The overlay's lower layer holds none of the guest's submounts: the
    # guest kernel's modules (for modprobe ip_vs) and the repository are
    # bound in again (after the tmpfs, should the repository be under
    # /root).
    mkdir -p "$root$repo"
    mount --bind "/lib/modules/$release" "$root/lib/modules/$release" || exit 1
    mount --bind "$repo" "$root$repo" || exit 1
    # This process is PID 1 of the new PID namespace: the proc mounted now
    # shows that namespace; sysfs mounted from the new network namespace
    # shows its links. Read-only, as systemd-nspawn does: nothing in a host
    # should reconfigure the guest's devices.
    mount -t proc proc "$root/proc" || exit 1
    mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys" || exit 1
    mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup" || exit 1
    mount -t devtmpfs -o nosuid,mode=0755 devtmpfs "$root/dev" || exit 1
    mkdir -p "$root/dev/pts" "$root/dev/shm"
    # A devpts of its own, so the host's ptys are its own.
    mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$root/dev/pts" || exit 1
    mount --bind "$root/dev/pts/ptmx" "$root/dev/ptmx" || exit 1
    mount -t tmpfs -o nosuid,nodev tmpfs "$root/dev/shm" || exit 1
    mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs "$root/run" || exit 1
    mount -t tmpfs -o nosuid,nodev tmpfs "$root/tmp" || exit 1
    # The guest's console is its serial port: each host's systemd writes its
    # status lines to a file instead.
    : > "$run/hosts.d/$name.console"
    mount --bind "$run/hosts.d/$name.console" "$root/dev/console" || exit 1
    cd "$root" || exit 1
    pivot_root . . || exit 1
    umount -l . || exit 1
    cd /
    # `container` tells systemd it is in a container (no hardware, no
    # udev); it must be in PID 1's own environment.
    exec env -i container=fulcrum-lab /lib/systemd/systemd --system \
        < /dev/null > /dev/console 2>&1
}

# Waits until NAME's systemd has finished booting; says whether it runs or
# which units failed.
wait_for_host() {
    name="$1"
    waiter="$(cat "$hosts/$name/unshare.pid")"
    leader=""
    while [ -z "$leader" ]; do
        kill -0 "$waiter" 2>/dev/null || { say "$name: its namespaces ended"; return 1; }
        leader="$(cat "/proc/$waiter/task/$waiter/children" 2>/dev/null)"
        leader="${leader%% *}"
        [ -n "$leader" ] || sleep 0.2
    done
    echo "$leader" > "$hosts/$name/leader.pid"
    while :; do
        kill -0 "$leader" 2>/dev/null || { say "$name: systemd ended"; return 1; }
        # --wait needs systemd's private bus; until systemd has made it,
        # systemctl fails at once, or says "offline" before systemd has
        # made /run/systemd/system.
        state="$(nsenter --target "$leader" --all systemctl is-system-running --wait 2>&1)"
        case "$state" in
            running)
                say "$name: running"
                return 0
                ;;
            degraded)
                failed="$(nsenter --target "$leader" --all \
                    systemctl --failed --plain --no-legend --no-pager | cut -d' ' -f1)"
                say "$name: degraded; failed units:" $failed
                return 0
                ;;
            offline | *"Failed to connect to bus"*) sleep 0.5 ;;
            *)
                say "$name: systemd says $state"
                return 1
                ;;
        esac
    done
}

up() {
    timeout="$1"
    say "setting up the segment"
    mkdir -p "$hosts" "$run/hosts.d"
    [ -e /sys/class/net/eth0 ] || fail "the guest has no eth0 (lab::Options::network unset?)"
    ip link add lan type bridge || fail "cannot create the bridge"
    ip address add 192.168.100.1/24 dev lan
    ip link set lan up
    echo 1 > /proc/sys/net/ipv4/ip_forward
    # Every controller for the hosts' cgroups: systemd in each delegates
    # them further.
    controllers="$(sed 's/[^ ]*/+&/g' /sys/fs/cgroup/cgroup.controllers)"
    echo "$controllers" > /sys/fs/cgroup/cgroup.subtree_control \
        || fail "cannot enable the cgroup controllers ($controllers)"

    rules="table ip fulcrum_hosts {
    chain prerouting {
        type nat hook prerouting priority dstnat;"
    index=0
    while read -r name address port; do
        index=$((index + 1))
        rules="$rules
        iifname \"eth0\" tcp dport $port dnat to $address:22"
    done < "$run/hosts"
    rules="$rules
    }
}"
    echo "$rules" | nft -f - || fail "cannot load the forwarding rules"

    # Each host in parallel: every process started costs a tenth of a
    # second or more under emulation.
    index=0
    preparations=""
    while read -r name address port; do
        index=$((index + 1))
        (
            prepare_root "$name" "$address"
            prepare_network "$name" "$address" "$index"
            mkdir "/sys/fs/cgroup/fulcrum-$name" || fail "$name: cannot create its cgroup"
            say "$name: booting systemd"
            nsenter --net="/run/netns/$name" \
                unshare --mount --pid --uts --ipc --fork --kill-child \
                /bin/sh "$0" boot "$run" "$name" &
            echo $! > "$hosts/$name/unshare.pid"
        ) < /dev/null &
        preparations="$preparations $!"
    done < "$run/hosts"
    for preparation in $preparations; do
        wait "$preparation" || fail "a host could not be prepared"
    done

    status=0
    while read -r name address port; do
        wait_for_host "$name" < /dev/null || status=1
    done < "$run/hosts"
    [ "$status" = 0 ] || fail "a host did not boot"
    say "ready"
    : > "$run/ready"
    # The guest powers off when this script ends.
    sleep "$timeout"
    say "timed out after $timeout s"
}

case "$mode" in
    up) up "$3" ;;
    boot) boot "$3" ;;
    stage) stage "$3" ;;
    *) fail "unknown mode $mode" ;;
esac
