#!/usr/bin/env bash
# ci/check_format.sh [ROOT]: every C++ source and header under ROOT (default this checkout) is as
# clang-format (.clang-format: Google, 100 columns) would write it, and no line is over 100
# columns (clang-format leaves some: a long #include or a URL). Prints each offence, FILE:LINE
# first, and exits 1 if there was any. A unit test; build trees (build*/) are not looked at.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"
mapfile -t files < <(find base verbs core uam ulp boot cli bench tests examples \
  -path '*/build*' -prune -o \( -name '*.cc' -o -name '*.h' \) -print | sort)
[ ${#files[@]} -gt 0 ] || { echo "check_format: no sources under $root" >&2; exit 1; }
bad=0
# Its status, not a grep of its output through a pipe: under pipefail the pipe's status was
# clang-format's, so `... | grep && bad=1` never set bad.
fmt=0
out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1) || fmt=$?
if [ "$fmt" -ne 0 ]; then
  bad=1
  grep -E '^[^ ].*: (error|warning):' <<<"$out" || tail -n 5 <<<"$out"
fi
# Characters, not bytes: a comment's "—" is one column.
LC_ALL=C.UTF-8 grep -nP '^.{101,}' "${files[@]}" | sed 's/$/  <- over 100 columns/' && bad=1
exit "$bad"
