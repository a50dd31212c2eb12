#!/usr/bin/env python3
"""Runs a command with socket(2) limited to some address families, as systemd's
RestrictAddressFamilies= does: a seccomp filter (libseccomp, which systemd itself links) makes
socket() with any other family fail with EAFNOSUPPORT, and sets no_new_privs as systemd does.

    restrict_address_families.py AF_UNIX AF_INET AF_INET6 -- COMMAND [ARG...]

Used by MacroHTTPTests.SystemdUnitTests to run macrod in the sandbox config/macrod.service asks for.
Exits 2 when the filter cannot be installed."""

import ctypes
import ctypes.util
import errno
import os
import socket
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ = 4
SCMP_CMP_GE = 5
AF_MAX = 46  # Linux 6.x: families are below this


def scmp_act_errno(code):
    return 0x00050000 | (code & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def main(argv):
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    names, command = argv[:split], argv[split + 1:]
    try:
        allowed = {int(getattr(socket, name)) for name in names}
    except AttributeError as error:
        print(f"restrict_address_families: unknown family: {error}", file=sys.stderr)
        return 2
    path = ctypes.util.find_library("seccomp")
    if not path or not command:
        print("restrict_address_families: libseccomp not found, or no command", file=sys.stderr)
        return 2
    lib = ctypes.CDLL(path, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    context = lib.seccomp_init(SCMP_ACT_ALLOW)
    number = lib.seccomp_syscall_resolve_name(b"socket")
    deny = scmp_act_errno(errno.EAFNOSUPPORT)
    rules = [ArgCmp(0, SCMP_CMP_EQ, family, 0) for family in range(AF_MAX) if family not in allowed]
    rules.append(ArgCmp(0, SCMP_CMP_GE, AF_MAX, 0))
    for rule in rules:
        if lib.seccomp_rule_add_array(context, deny, number, 1, ctypes.byref(rule)) != 0:
            print("restrict_address_families: seccomp_rule_add failed", file=sys.stderr)
            return 2
    if lib.seccomp_load(context) != 0:
        print("restrict_address_families: seccomp_load failed", file=sys.stderr)
        return 2
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
