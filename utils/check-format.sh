#!/usr/bin/env bash
# Checks that every C, C++ and CUDA source is formatted as .clang-format says
# (clang-format-22: the LLVM style) and that the Python passes ruff
# (ruff.toml). Names each file that is off and exits 1; `--fix` rewrites the
# C/C++/CUDA files and applies ruff's safe fixes instead. test/format.test
# runs it in the suite; utils/setup.sh installs both tools.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-22}
# ruff as a command, or as the module of the Python that setup gave it to.
read -r -a RUFF <<<"${RUFF:-$(command -v ruff || echo "${PYTHON:-python3} -m ruff")}"
fix=0
[[ ${1:-} == --fix ]] && fix=1

mapfile -t sources < <(find include lib tools kernels examples test \
  -path test/Inputs -prune -o \
  -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
  -print | sort)
mapfile -t python < <(find bench examples test utils -path test/Inputs -prune \
  -o -type f -name '*.py' -print | sort)

if ((fix)); then
  "$CLANG_FORMAT" -i "${sources[@]}"
  exec "${RUFF[@]}" check --quiet --fix "${python[@]}"
fi
off=0
for f in "${sources[@]}"; do
  if ! "$CLANG_FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f is not clang-format-clean (utils/check-format.sh --fix)"
    off=$((off + 1))
  fi
done
lint=clean
"${RUFF[@]}" check --quiet --output-format concise "${python[@]}" || lint="ruff errors above"
echo "check-format: ${#sources[@]} C/C++/CUDA files, $off not formatted;" \
  "${#python[@]} Python files, $lint"
[[ $off == 0 && $lint == clean ]]
