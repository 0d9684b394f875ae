#!/usr/bin/env python3
"""amp-run --max-batch: the batch it finds is the boundary of what fits.

  max_batch_check.py --amp-run BIN --model DIR --limit SIZE [--amp MODE]

runs `amp-run DIR/training_model.onnx DIR/optimizer_model.onnx --max-batch=
SIZE` and checks its answer B independently of the search: a plain training
step at batch B reports ("device memory at its peak") at most SIZE bytes and
exactly the peak the search reported for B, and a step at B + 1 reports more
than SIZE. The limit is also given in bytes and in another unit: the same
answer. Prints "max-batch: B" and "max-batch-check: PASS".

  max_batch_check.py --amp-run BIN --model DIR --fixed-batch TMP

copies DIR's artifacts into TMP with every leading dim of the training
graph's inputs made static (onnx, in memory) and checks that --max-batch
refuses the model: there is no batch to vary.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys


def run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def peak_of(args, batch):
    argv = base(args) + ["--batch", str(batch), "--steps", "1"]
    p = run(argv)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    m = re.search(r"device memory at its peak: (\d+) bytes", p.stderr)
    if not m:
        sys.exit(f"FAIL: no peak line in\n{p.stderr}")
    return int(m.group(1))


def base(args):
    argv = [args.amp_run, os.path.join(args.model, "training_model.onnx"),
            os.path.join(args.model, "optimizer_model.onnx")]
    if args.amp:
        argv.append(f"--amp={args.amp}")
    return argv


def search(args, limit):
    p = run(base(args) + [f"--max-batch={limit}"])
    if p.returncode != 0:
        sys.exit(f"FAIL: --max-batch={limit}: exit {p.returncode}\n{p.stderr}")
    batch = int(p.stdout.strip())
    m = re.search(r"the largest batch that fits in (\d+) bytes .*: (\d+), its "
                  r"step's peak (\d+) bytes .*; batch (\d+) does not fit",
                  p.stderr)
    if not m or int(m.group(2)) != batch:
        sys.exit(f"FAIL: no summary line for batch {batch} in\n{p.stderr}")
    return batch, int(m.group(1)), int(m.group(3)), int(m.group(4))


def check(args):
    units = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
    number, unit = re.fullmatch(r"(\d+)(KiB|MiB|GiB)", args.limit).groups()
    limit = int(number) * units[unit]
    batch, said, peak, miss = search(args, args.limit)
    if said != limit:
        sys.exit(f"FAIL: searched within {said} bytes, not {limit}")
    if miss != batch + 1:
        sys.exit(f"FAIL: the search ended at {batch} fits, {miss} does not")
    # The same limit in bytes, and in KiB: the same answer.
    for other in (str(limit), f"{limit // 1024}KiB"):
        again = search(args, other)[0]
        if again != batch:
            sys.exit(f"FAIL: --max-batch={other} gives {again}, "
                     f"--max-batch={args.limit} {batch}")
    at = peak_of(args, batch)
    above = peak_of(args, batch + 1)
    print(f"max-batch: {batch}")
    print(f"batch {batch}: peak {at} bytes, batch {batch + 1}: {above} bytes, "
          f"limit {limit}")
    if at != peak:
        sys.exit(f"FAIL: a step at batch {batch} peaks at {at} bytes, the "
                 f"search said {peak}")
    if not at <= limit < above:
        sys.exit(f"FAIL: not the boundary: {at} <= {limit} < {above} fails")
    print("max-batch-check: PASS")


def fixed(args):
    import onnx

    os.makedirs(args.fixed_batch, exist_ok=True)
    for f in os.listdir(args.model):
        shutil.copy(os.path.join(args.model, f), args.fixed_batch)
    path = os.path.join(args.fixed_batch, "training_model.onnx")
    m = onnx.load(path)
    for vi in list(m.graph.input) + list(m.graph.output) + \
            list(m.graph.value_info):
        dims = vi.type.tensor_type.shape.dim
        if dims and dims[0].dim_param:
            dims[0].dim_value = 4
    onnx.save(m, path)
    args.model = args.fixed_batch
    p = run(base(args) + ["--max-batch=64MiB"])
    print(f"exit {p.returncode}")
    print(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "")
    if p.returncode == 0 or p.stdout.strip():
        sys.exit("FAIL: a fixed-batch model was searched")
    print("max-batch-fixed: PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--limit")
    ap.add_argument("--amp")
    ap.add_argument("--fixed-batch")
    args = ap.parse_args()
    if args.fixed_batch:
        fixed(args)
    else:
        check(args)


if __name__ == "__main__":
    main()
