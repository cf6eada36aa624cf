# The lab guest's PID 1 after switch_root: the host's filesystem is now the
# root. Runs the command xtask wrote, records its status, powers off.
# Arguments: the run folder, then the devices for stdout and stderr.
run="$1"
stdout="$2"
stderr="$3"

echo "fulcrum-lab: running command" > /dev/console
/bin/sh "$run/command" < /dev/null > "$stdout" 2> "$stderr"
status=$?
echo "$status" > "$run/status"
echo "fulcrum-lab: command exited with status $status" > /dev/console
sync
# QEMU runs with -no-reboot, so a reboot ends it; sysrq needs no userspace.
echo b > /proc/sysrq-trigger
sleep 60
