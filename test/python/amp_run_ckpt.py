#!/usr/bin/env python3
"""Reads amp-run checkpoints (docs/amp-run.md has the format) and compares
them: `amp_run_ckpt.py A B` prints, per tensor, `same` or `differs`, and the
counters of both. Used by the fault-injection test to show that a skipped
step leaves weights and optimizer state bit-identical."""

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


def main():
    ca, ta = read(sys.argv[1])
    cb, tb = read(sys.argv[2])
    print("A", " ".join(f"{k}={v}" for k, v in ca.items()))
    print("B", " ".join(f"{k}={v}" for k, v in cb.items()))
    for name in sorted(set(ta) | set(tb)):
        print(name, "same" if ta.get(name) == tb.get(name) else "differs")


if __name__ == "__main__":
    main()
