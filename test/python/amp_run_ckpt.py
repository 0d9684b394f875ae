#!/usr/bin/env python3
"""Reads amp-run checkpoints (docs/amp-run.md has the format) and compares
them: `amp_run_ckpt.py A B` prints, per tensor, `same` or `differs`, and the
counters of both. Used by the fault-injection test to show that a skipped
step leaves weights and optimizer state bit-identical.

`amp_run_ckpt.py --to-v1 IN OUT` rewrites a checkpoint in the first format,
AMPCKPT1 (the same payload, an FNV-1a checksum), as amp-run wrote it before
AMPCKPT2: the resume test reads such a file."""

import struct
import sys


def read(path):
    b = open(path, "rb").read()
    # AMPCKPT2 (written now) and AMPCKPT1 share the layout; only their
    # checksums differ, which this reader does not check.
    assert b[:8] in (b"AMPCKPT1", b"AMPCKPT2"), "bad magic"
    (n,) = struct.unpack_from("<Q", b, 8)
    p = b[16:16 + n]
    at = 0

    def get(fmt):
        nonlocal at
        v = struct.unpack_from(fmt, p, at)
        at += struct.calcsize(fmt)
        return v

    steps, opt_step, skipped, lr, count = get("<QQQdI")
    tensors = {}
    for _ in range(count):
        (ln,) = get("<I")
        name = p[at:at + ln].decode()
        at += ln
        dtype, rank = get("<iI")
        get(f"<{rank}q")
        (nb,) = get("<Q")
        tensors[name] = p[at:at + nb]
        at += nb
    return {"steps": steps, "optimizer_step": opt_step, "skipped": skipped,
            "lr": lr}, tensors


def to_v1(src, dst):
    b = open(src, "rb").read()
    (n,) = struct.unpack_from("<Q", b, 8)
    payload = b[16:16 + n]
    h = 0xcbf29ce484222325
    for c in payload:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    with open(dst, "wb") as f:
        f.write(b"AMPCKPT1" + b[8:16] + payload + struct.pack("<Q", h))


def main():
    if sys.argv[1] == "--to-v1":
        return to_v1(sys.argv[2], sys.argv[3])
    ca, ta = read(sys.argv[1])
    cb, tb = read(sys.argv[2])
    print("A", " ".join(f"{k}={v}" for k, v in ca.items()))
    print("B", " ".join(f"{k}={v}" for k, v in cb.items()))
    for name in sorted(set(ta) | set(tb)):
        print(name, "same" if ta.get(name) == tb.get(name) else "differs")


if __name__ == "__main__":
    main()
