#!/usr/bin/env python3
# seccomp_exec.py PROFILE CMD...: loads a Docker seccomp PROFILE (its
# unconditional SCMP_ACT_ALLOW rules; default action EPERM) as this
# process's filter, as the Docker engine would for a container, then execs
# CMD.  For tests/ops/t_docker_privs.sh (no Docker engine on the test hosts).
import ctypes, json, os, sys
lib = ctypes.CDLL("libseccomp.so.2")
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
p = json.load(open(sys.argv[1]))
SCMP_ACT_ERRNO = lambda e: 0x00050000 | (e & 0xffff)
ctx = lib.seccomp_init(SCMP_ACT_ERRNO(p.get("defaultErrnoRet", 1)))
lib.seccomp_attr_set(ctx, 3, 0)  # SCMP_FLTATR_CTL_NNP off: Docker loads it without no_new_privs
unknown = []
for rule in p["syscalls"]:
    assert rule["action"] == "SCMP_ACT_ALLOW" and "args" not in rule
    for n in rule["names"]:
        nr = lib.seccomp_syscall_resolve_name(n.encode())
        if nr < 0: unknown.append(n); continue
        assert lib.seccomp_rule_add(ctx, 0x7fff0000, nr, 0) == 0, n
assert lib.seccomp_load(ctx) == 0
sys.stderr.write("seccomp_exec: loaded; unknown to this libseccomp: %s\n" % " ".join(unknown))
os.execvp(sys.argv[2], sys.argv[2:])
