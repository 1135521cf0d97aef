#!/usr/bin/env bash
# ci/check_header_style.sh [ROOT]: checks that the public headers (verbs/, core/, uam/, ulp/
# include/unet/*/*.h under ROOT, default this checkout) keep the house style that
# docs/architecture.md ("Reading the headers") describes:
#   - line 1 is the summary `// Name: one line`, where Name is the header's main type or function,
#     or several joined by ", ", " and " or " / " (`uam::Endpoint`, `DescriptorRing<T>` and
#     `transition()` are names too), and each name appears again further down the header;
#   - no Doxygen comments (`/**`, `/*!`, `///`, `//!`): plain `//` only.
# Prints one line per violation, FILE:LINE first, and exits 1 if there was any. A unit test.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

name='[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*(<[^>]*>)?(\(\))?'
summary="^// ${name}((, | and | / )${name})*: [^ ]"

shopt -s nullglob
headers=("$root"/{verbs,core,uam,ulp}/include/unet/*/*.h)
if [ ${#headers[@]} -eq 0 ]; then
  echo "check_header_style: no public headers under $root" >&2
  exit 1
fi

bad=0
for h in "${headers[@]}"; do
  rel=${h#"$root"/}
  first=$(head -n 1 "$h")
  if ! grep -qE "$summary" <<<"$first"; then
    echo "$rel:1: the first line must be '// Name: one-line summary', not: $first"
    bad=1
  else
    # Each name in the summary must still be in the header (a renamed type leaves a stale one).
    while read -r n; do
      base=${n##*::}
      base=${base%%<*}
      base=${base%"()"}
      # Not `tail | grep -q`: under pipefail, grep -q leaving early kills tail with SIGPIPE and
      # the pipeline fails although the name was found (under load it does).
      if ! grep -qw -- "$base" < <(tail -n +2 "$h"); then
        echo "$rel:1: the summary names '$n', which the header does not declare"
        bad=1
      fi
    done < <(sed -E 's|^// ||; s|: .*||; s#(, | and | / )#\n#g' <<<"$first")
  fi
  while IFS= read -r hit; do
    echo "$rel:${hit%%:*}: Doxygen comment; use plain // comments"
    bad=1
  done < <(grep -nE '/\*\*|/\*!|///|//!' "$h" || true)
done

if [ "$bad" -ne 0 ]; then
  echo "check_header_style: see docs/architecture.md, \"Reading the headers\"" >&2
  exit 1
fi
echo "check_header_style: ${#headers[@]} public headers follow the house style"
