"""A tiny seccomp filter for the sandbox, written as classic BPF (no libseccomp needed).

    program = build_filter()          # bytes for bwrap --seccomp FD, or None on other machines

It denies, for every process of a sandbox:
- the kernel keyring (`add_key`, `request_key`, `keyctl`): keyrings are not isolated by the
  other namespaces, so one student's process could leave data there for the next student's;
- new user namespaces (`unshare`/`clone` with CLONE_NEWUSER; `clone3` answers ENOSYS so that
  libc falls back to `clone`, whose flags the filter can read): inside one, a process would
  get the capabilities to mount file systems of unbounded size;
- every system call of another ABI (x32, 32-bit compat), which would bypass the numbers above.
Everything else is allowed. Machines other than x86-64 and aarch64 get no filter (None).
"""

import platform
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16

BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38
CLONE_NEWUSER = 0x10000000

# arch token, syscall numbers (add_key, request_key, keyctl, unshare, clone, clone3), x32 bit
ARCHES = {
    "x86_64": (0xC000003E, (248, 249, 250, 272, 56, 435), 0x40000000),
    "aarch64": (0xC00000B7, (217, 218, 219, 97, 220, 435), None),
}


def _op(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build_filter(machine: str | None = None) -> bytes | None:
    """The filter's bytes for this machine (platform.machine()), or None if it is not known."""
    spec = ARCHES.get(machine or platform.machine())
    if spec is None:
        return None
    arch, (add_key, request_key, keyctl, unshare, clone, clone3), x32 = spec
    deny = SECCOMP_RET_ERRNO | EPERM
    # Each jt/jf counts the instructions to skip after the current one (see the comments).
    prog = [
        _op(BPF_LD_W_ABS, OFFSET_ARCH),
        _op(BPF_JEQ_K, arch, 1, 0),  # another ABI: deny everything
        _op(BPF_RET_K, deny),
        _op(BPF_LD_W_ABS, OFFSET_NR),
    ]
    if x32 is not None:
        prog += [_op(BPF_JGE_K, x32, 0, 1), _op(BPF_RET_K, deny)]
    prog += [
        _op(BPF_JEQ_K, add_key, 6, 0),
        _op(BPF_JEQ_K, request_key, 5, 0),
        _op(BPF_JEQ_K, keyctl, 4, 0),
        _op(BPF_JEQ_K, clone3, 4, 0),
        _op(BPF_JEQ_K, unshare, 4, 0),
        _op(BPF_JEQ_K, clone, 3, 0),
        _op(BPF_RET_K, SECCOMP_RET_ALLOW),
        _op(BPF_RET_K, deny),  # keyring
        _op(BPF_RET_K, SECCOMP_RET_ERRNO | ENOSYS),  # clone3: libc falls back to clone
        _op(BPF_LD_W_ABS, OFFSET_ARG0),  # unshare/clone: their flags (low 32 bits)
        _op(BPF_JSET_K, CLONE_NEWUSER, 0, 1),
        _op(BPF_RET_K, deny),
        _op(BPF_RET_K, SECCOMP_RET_ALLOW),
    ]
    return b"".join(prog)
