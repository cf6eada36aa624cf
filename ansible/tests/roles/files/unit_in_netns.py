#!/usr/bin/env python3
"""Runs a fulcrum-real-server.service's commands in a network namespace of
its own, as systemd would run them, and checks what they leave.

    unit_in_netns.py UNIT --expect VIP/LEN@DEV ... [--previous OLD_UNIT
        --undo FILE --gone VIP/LEN@DEV ...]

In the namespace (unshare -n: nothing of this machine's network is
touched): ExecStart, checking that every --expect address is on its device;
ExecStart again (a start after a crash, every line must hold); ExecStop,
checking that they are gone. With --previous: OLD_UNIT's ExecStart first,
then what the role does when it replaces it (the new unit's ExecStop and
ExecStart, the restart; then FILE's lines, the role's "undo" handler),
checking that the --expect addresses are there and the --gone ones are not.

This machine's kernel may lack the tunnels (ipip, gre, fou) and modules:
modprobe is never run (it would load modules into this machine's kernel);
a fallback device (tunl0, gre0) that modprobe would make is a veth stand-in;
`ip link add ... type gre` falls back to a veth stand-in and `ip fou` to a
check of its words when the kernel refuses them, each said on stdout.
Commands written with systemd's "-" may fail, as systemd lets them.
"""

import json
import re
import subprocess
import sys

FALLBACK_DEVICES = {"tunl0", "gre0"}


def commands(unit, key):
    """The unit's KEY= lines as (may_fail, argv)."""
    found = []
    for line in open(unit, encoding="utf-8").read().splitlines():
        if line.startswith(key + "="):
            command = line[len(key) + 1 :]
            may_fail = command.startswith("-")
            found.append((may_fail, command.lstrip("-").split()))
    return found


def run(argv, check=True):
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise SystemExit(
            f"FAILED: {' '.join(argv)}: status {result.returncode}: {result.stderr.strip()}"
        )
    return result


def addresses():
    """Every address in the namespace, as VIP/LEN@DEV."""
    links = json.loads(run(["ip", "-j", "address", "show"]).stdout)
    return {
        f"{info['local']}/{info['prefixlen']}@{link['ifname']}"
        for link in links
        for info in link.get("addr_info", [])
    }


STAND_INS = []


def stand_in(device):
    peer = f"si{len(STAND_INS)}"
    run(["ip", "link", "add", device, "type", "veth", "peer", "name", peer])
    STAND_INS.append(device)
    print(f"  (stand-in: {device} is a veth here)")


def execute(unit, key):
    print(f"{key} of {unit}:")
    for may_fail, argv in commands(unit, key):
        program = argv[0].rsplit("/", 1)[-1]
        words = " ".join(argv)
        if program == "modprobe":
            print(f"  not run (modules are this machine's): {words}")
            for module, device in (("ipip", "tunl0"), ("ip_gre", "gre0")):
                if module in argv[1:] and device not in STAND_INS:
                    if run(["ip", "link", "show", device], check=False).returncode != 0:
                        stand_in(device)
            continue
        if program == "sysctl":
            setting = argv[-1].split("=")[0].replace("/", ".")
            if not setting.startswith("net.ipv4.conf."):
                raise SystemExit(f"FAILED: {words}: not a per-namespace setting")
        if program == "ip" and argv[1:3] == ["link", "add"] and "gre" in argv:
            result = run(argv, check=False)
            if result.returncode != 0 and "Unknown device type" in result.stderr:
                print(f"  no GRE in this kernel, checked the words: {words}")
                if not re.fullmatch(
                    r"ip link add \S{1,15} type gre local [0-9.]+ icsum", " ".join([program] + argv[1:])
                ):
                    raise SystemExit(f"FAILED: {words}: not the GRE device expected")
                stand_in(argv[3])
                continue
            if result.returncode != 0:
                raise SystemExit(f"FAILED: {words}: {result.stderr.strip()}")
            print(f"  ran: {words}")
            continue
        if program == "ip" and argv[1] == "fou":
            result = run(argv, check=False)
            if result.returncode != 0 and run(["ip", "fou", "show"], check=False).returncode != 0:
                print(f"  no fou in this kernel, checked the words: {words}")
                if not re.fullmatch(r"ip fou (add port [0-9]{1,5} gue|del port [0-9]{1,5})",
                                    " ".join([program] + argv[1:])):
                    raise SystemExit(f"FAILED: {words}: not the fou command expected")
                continue
            if result.returncode != 0 and not may_fail:
                raise SystemExit(f"FAILED: {words}: {result.stderr.strip()}")
            print(f"  ran: {words}")
            continue
        result = run(argv, check=False)
        if result.returncode != 0 and not may_fail:
            raise SystemExit(f"FAILED: {words}: status {result.returncode}: {result.stderr.strip()}")
        print(f"  ran: {words}" + (" (failed, allowed)" if result.returncode else ""))


def expect(present, absent, when):
    have = addresses()
    missing = sorted(set(present) - have)
    stray = sorted(set(absent) & have)
    if missing or stray:
        raise SystemExit(
            f"FAILED {when}: missing {missing}, still there {stray}; addresses: {sorted(have)}"
        )
    print(f"  {when}: {sorted(present)} there" + (f", {sorted(absent)} gone" if absent else ""))


def inside(arguments):
    unit = arguments[0]
    options = {"--expect": [], "--gone": [], "--previous": [], "--undo": []}
    current = None
    for word in arguments[1:]:
        if word in options:
            current = options[word]
        else:
            current.append(word)
    run(["ip", "link", "set", "lo", "up"])
    expected = options["--expect"]
    if options["--previous"]:
        previous = options["--previous"][0]
        execute(previous, "ExecStart")
        execute(unit, "ExecStop")
        execute(unit, "ExecStart")
        undo = open(options["--undo"][0], encoding="utf-8").read().splitlines()
        print("the role's undo handler:")
        for line in undo:
            argv = re.sub(r"^ExecStop=-?", "", line).split()
            result = run(argv, check=False)
            print(f"  ran: {' '.join(argv)}" + (" (failed, allowed)" if result.returncode else ""))
        expect(expected, options["--gone"], "after the replacement")
    else:
        execute(unit, "ExecStart")
        expect(expected, [], "after start")
        execute(unit, "ExecStart")
        expect(expected, [], "after a second start")
    execute(unit, "ExecStop")
    expect([], expected, "after stop")


def main():
    if sys.argv[1] == "--inside":
        inside(sys.argv[2:])
        return
    result = subprocess.run(["unshare", "-n", sys.executable, __file__, "--inside"] + sys.argv[1:])
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
