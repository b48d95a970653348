# shellcheck shell=bash
# ncu_common.sh: what the Nsight Compute scripts share (sourced by scripts/ncu_traffic.sh,
# scripts/ncu_speed.sh and bench/ncu_heads.sh; not run alone).
#   ncu_find NAME   sets NCU to ncu on PATH or the newest under /opt/nvidia/nsight-compute; without
#                   one, says so as NAME and exits 77 (skipped)
#   msum FILE METRIC   prints "SUM COUNT": the sum of METRIC over the launches of the `ncu --csv
#                   --page raw` file FILE (its units line skipped) and how many launches had it;
#                   an empty SUM and 0 when the file has no such column or no value
ncu_find() {
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort | tail -1 || true)
  if [ -z "$NCU" ] || [ ! -x "$NCU" ]; then
    echo "$1: Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute" >&2
    exit 77
  fi
}
msum() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows or sys.argv[2] not in rows[0]:
    print("", 0); sys.exit()
c, t, n = rows[0].index(sys.argv[2]), 0.0, 0
for r in rows[1:]:
    try:
        t += float(r[c].replace(",", "")); n += 1
    except ValueError:
        pass
print(f"{t:.0f}" if n else "", n)
PY
}
