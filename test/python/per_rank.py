#!/usr/bin/env python3
"""Runs a command as one rank of an mpirun job, changed on one rank: the
data-parallel tests' way to make ranks disagree or fail (issue 24).

    mpirun -np 2 per_rank.py --rank 1 --extra "--lr 0.5" -- amp-run ...
    mpirun -np 2 per_rank.py --rank 1 --kill-after 3 -- amp-run ...

On the named rank (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID), the
--extra arguments are appended to the command, or the command is killed
with SIGKILL after --kill-after seconds (a crashed rank; this process then
dies by the same signal). Every other rank runs the command as given. The
exit status is the command's.
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys


def this_rank():
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        if var in os.environ:
            return int(os.environ[var])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--extra", default="")
    ap.add_argument("--kill-after", type=float)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if this_rank() != args.rank:
        os.execvp(cmd[0], cmd)
    if args.extra:
        os.execvp(cmd[0], cmd + shlex.split(args.extra))
    child = subprocess.Popen(cmd)
    try:
        sys.exit(child.wait(timeout=args.kill_after))
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
