#!/bin/sh
# expect_status.sh STATUS COMMAND...: runs COMMAND and succeeds only when it exits with STATUS;
# 77 (skipped: no device) passes through, so ctest's SKIP_RETURN_CODE still applies.
want=$1
shift
"$@"
rc=$?
[ "$rc" -eq 77 ] && exit 77
if [ "$rc" -ne "$want" ]; then
  echo "expect_status.sh: exit status $rc, expected $want" >&2
  exit 1
fi
exit 0
