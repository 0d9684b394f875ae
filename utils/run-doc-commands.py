#!/usr/bin/env python3
"""Runs the shell blocks of a Markdown file, so the commands a document shows
are the commands a test runs (test/Embedding/embedding-doc.test,
test/Docs/readme.test).

Every fenced block whose info string is `sh` is run, in order, as one bash
script (`set -euo pipefail`) from the repository root (or --cwd DIR); each
command is echoed to stderr. Blocks fenced as `console`, `bash` or anything
else are not run.

With --check-output, the script's stdout and stderr are taken together
(and printed), and every `console` block that comes after an `sh` block is
what that output must show: its lines, in order, must each match a line of
the output, after the previous match (as FileCheck's CHECK lines do). A
line matches when it equals the output line with surrounding blanks
trimmed; `...` inside a line stands for any text (a time, a rate), and a
line that is only `...` matches nothing and is skipped. A line not found is
an error naming its line in the document.

    utils/run-doc-commands.py docs/Embedding.md
    utils/run-doc-commands.py --cwd /tmp/work --check-output README.md
"""
import argparse
import pathlib
import re
import subprocess
import sys

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", flags=re.M | re.S)


def blocks(text):
    """[(info string, body, line of the body's first line)]."""
    return [(m.group(1).strip(), m.group(2),
             text.count("\n", 0, m.start(2)) + 1)
            for m in FENCE.finditer(text)]


def expectations(found):
    """The lines of each `console` block after the first `sh` block:
    [(document line, compiled pattern, text)]."""
    out = []
    seen_sh = False
    for info, body, first in found:
        if info == "sh":
            seen_sh = True
        elif info == "console" and seen_sh:
            for i, line in enumerate(body.splitlines()):
                text = line.strip()
                if not text or text == "...":
                    continue
                pattern = ".*".join(re.escape(p) for p in text.split("..."))
                out.append((first + i, re.compile(pattern + r"\Z"), text))
    return out


def check(doc, output, wanted):
    lines = [line.strip() for line in output.splitlines()]
    at = 0
    for doc_line, pattern, text in wanted:
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        if at == len(lines):
            print(f"{doc}:{doc_line}: output line not found "
                  f"(in order, after the lines above it): {text}",
                  file=sys.stderr)
            return False
        at += 1
    return True


def main():
    ap = argparse.ArgumentParser(
        description="Run a Markdown file's sh blocks as one bash script.")
    ap.add_argument("doc", help="the Markdown file")
    ap.add_argument("--cwd", help="run there (default: the repository root)")
    ap.add_argument("--check-output", action="store_true",
                    help="check the output against the console blocks")
    args = ap.parse_args()
    doc = pathlib.Path(args.doc)
    found = blocks(doc.read_text())
    shell = [body for info, body, _ in found if info == "sh"]
    if not shell:
        sys.exit(f"{doc}: no ```sh blocks")
    script = "set -euo pipefail -x\n" + "\n".join(shell)
    root = pathlib.Path(__file__).resolve().parent.parent
    cwd = args.cwd or root
    if not args.check_output:
        sys.exit(subprocess.run(["bash", "-c", script], cwd=cwd).returncode)
    wanted = expectations(found)
    if not wanted:
        sys.exit(f"{doc}: --check-output, but no ```console block "
                 f"after an ```sh block")
    run = subprocess.run(["bash", "-c", script], cwd=cwd, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(run.stdout)
    sys.stdout.flush()
    if run.returncode != 0:
        sys.exit(run.returncode)
    sys.exit(0 if check(doc, run.stdout, wanted) else 1)


if __name__ == "__main__":
    main()
