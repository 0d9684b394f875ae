#!/usr/bin/env python3
"""Runs the shell blocks of a Markdown file, so the commands a document shows
are the commands a test runs (test/Embedding/embedding-doc.test).

Every fenced block whose info string is `sh` is run, in order, as one bash
script (`set -euo pipefail`) from the repository root; each command is echoed
to stderr. Blocks fenced as `console`, `bash` or anything else are not run.

    utils/run-doc-commands.py docs/Embedding.md
"""
import pathlib
import re
import subprocess
import sys


def shell_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.M | re.S)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run-doc-commands.py FILE.md")
    doc = pathlib.Path(sys.argv[1])
    blocks = shell_blocks(doc.read_text())
    if not blocks:
        sys.exit(f"{doc}: no ```sh blocks")
    script = "set -euo pipefail -x\n" + "\n".join(blocks)
    root = pathlib.Path(__file__).resolve().parent.parent
    sys.exit(subprocess.run(["bash", "-c", script], cwd=root).returncode)


if __name__ == "__main__":
    main()
