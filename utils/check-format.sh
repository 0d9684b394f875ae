#!/usr/bin/env bash
# check-format.sh [--fix] [DIR]
# Checks that every C, C++ and CUDA source of the tree at DIR (the checkout
# by default) is formatted as .clang-format says (clang-format-22: the LLVM
# style) and that its Python passes ruff (ruff.toml). Names each file that is
# off and exits 1; `--fix` rewrites the C/C++/CUDA files and applies ruff's
# safe fixes instead. test/format.test runs it in the suite; utils/setup.sh
# installs both tools.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-22}
# ruff as a command, or as the module of the Python that setup gave it to.
read -r -a RUFF <<<"${RUFF:-$(command -v ruff || echo "${PYTHON:-python3} -m ruff")}"
fix=0
if [[ ${1:-} == --fix ]]; then
  fix=1
  shift
fi
cd "${1:-$here}"
# The checkout's settings apply to a tree that has none of its own.
style=(--style="file:$here/.clang-format")
[[ -f .clang-format ]] && style=(--style=file)
config=(--config "$here/ruff.toml")
[[ -f ruff.toml ]] && config=()

dirs=()
for d in include lib tools kernels examples test bench utils; do
  [[ -d $d ]] && dirs+=("$d")
done
mapfile -t sources < <(find "${dirs[@]}" \
  -path test/Inputs -prune -o \
  -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
  -print | sort)
mapfile -t python < <(find "${dirs[@]}" -path test/Inputs -prune \
  -o -type f -name '*.py' -print | sort)

if ((fix)); then
  "$CLANG_FORMAT" "${style[@]}" -i "${sources[@]}"
  exec "${RUFF[@]}" check --quiet "${config[@]}" --fix "${python[@]}"
fi
off=0
for f in "${sources[@]}"; do
  if ! "$CLANG_FORMAT" "${style[@]}" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f is not clang-format-clean (utils/check-format.sh --fix)"
    off=$((off + 1))
  fi
done
lint=clean
"${RUFF[@]}" check --quiet "${config[@]}" --output-format concise "${python[@]}" ||
  lint="ruff errors above"
echo "check-format: ${#sources[@]} C/C++/CUDA files, $off not formatted;" \
  "${#python[@]} Python files, $lint"
[[ $off == 0 && $lint == clean ]]
