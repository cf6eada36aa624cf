#!/bin/busybox sh
# PID 1 of the lab's guest. It lives in the initramfs that xtask builds for each
# run, next to a static busybox and the few modules needed to reach the host:
# virtio, 9p and overlayfs are modules in Debian's kernel, not built in.
#
# It mounts the host's root filesystem read-only over 9p under a tmpfs overlay,
# mounts the repository read-write at its own path (so results and captures
# land on the host), then runs the command that xtask wrote into the run
# folder (stage2.sh, after switching root), with its output on two virtio
# serial ports, and powers off.

/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

say() { echo "fulcrum-lab: $*" > /dev/console; }
halt() {
    sync
    # sysrq needs no userspace; QEMU runs with -no-reboot so "b" ends it.
    echo b > /proc/sysrq-trigger
    sleep 60
}
fail() { say "error: $*"; halt; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say "init"

for module in $(cat /modules/order); do
    insmod "/modules/$module" || fail "cannot load $module"
done

# xtask writes this run's paths (run folder, repository, kernel modules)
# into the initramfs, quoted for the shell: any path works, spaces too.
. /parameters
[ -n "$run" ] && [ -n "$repo" ] && [ -n "$modules" ] || fail "missing parameters"

mkdir -p /mnt/host /mnt/overlay /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=524288 hostroot /mnt/host \
    || fail "cannot mount the host's root filesystem over 9p"
mount -t tmpfs -o mode=0755 tmpfs /mnt/overlay
mkdir -p /mnt/overlay/upper /mnt/overlay/work
mount -t overlay -o lowerdir=/mnt/host,upperdir=/mnt/overlay/upper,workdir=/mnt/overlay/work \
    overlay /newroot || fail "cannot mount the overlay"
# The guest kernel's modules, unpacked on the host, appear where modprobe
# looks for them, so ip_vs and its schedulers load on demand as on a server.
# Bound before /tmp gets its tmpfs, which would hide a cache kept there.
release="$(uname -r)"
mkdir -p "/newroot/lib/modules/$release"
mount --bind "/newroot$modules" "/newroot/lib/modules/$release" || fail "cannot bind the modules"

mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs tmpfs /newroot/tmp
mount -t tmpfs tmpfs /newroot/run
mkdir -p /newroot/run/lock /newroot/run/netns
ln -sfn /run /newroot/var/run 2>/dev/null
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup 2>/dev/null

# The repository last, so a clone under /tmp is not hidden by its tmpfs.
mkdir -p "/newroot$repo"
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=524288 repo "/newroot$repo" \
    || fail "cannot mount the repository read-write"
echo /sbin/modprobe > /proc/sys/kernel/modprobe

hostname lab
ip link set lo up
# A run with a user-mode network card (lab::UserNetwork): QEMU forwards its
# ports to 10.0.2.15, the address its DHCP server would hand out.
if [ -e /sys/class/net/eth0 ]; then
    ip link set eth0 up
    ip address add 10.0.2.15/24 dev eth0
fi

# Each of the command's output streams has a named virtio serial port.
for port in /sys/class/virtio-ports/*; do
    case "$(cat "$port/name")" in
        fulcrum.stdout) stdout="/newroot/dev/${port##*/}" ;;
        fulcrum.stderr) stderr="/newroot/dev/${port##*/}" ;;
    esac
done
[ -n "$stdout" ] && [ -n "$stderr" ] || fail "no output ports"

# PID 1 itself must change root: the kernel starts its helpers (modprobe,
# for ip_vs schedulers and link types) in PID 1's root, which would
# otherwise stay the initramfs, where there are no modules.
cp /stage2.sh /newroot/run/fulcrum-lab-stage2
exec switch_root /newroot /bin/sh /run/fulcrum-lab-stage2 "$run" "${stdout#/newroot}" "${stderr#/newroot}"
