#!/usr/bin/env bash
# ncu_heads.sh: Nsight Compute's SM<->L2 traffic of one of our fast kernels over many heads at once
# (the fast library, bench/run_forward.py) against the byte counters of one head (flashlab-gpu run,
# the counters build) times the heads: every head runs the same schedule, so it moves the same bytes.
#
# usage: bench/ncu_heads.sh BIN_DIR OUT_CSV [CONFIG_FILE]
#   BIN_DIR      holds flashlab-gpu (counters) and libflashlab_kernels.so
#   CONFIG_FILE  lines "version dtype d Br Bc N nbh causal pass kernel_regex" (default bench/ncu_heads.conf)
# Metrics (ncu --cache-control all --clock-control none: caches flushed before every launch, clocks
# as found), summed over the matching launches of three calls and divided by 3: sm_read_B = l1tex__m_xbar2l1tex_read_sectors x 32 (every
# sector into the SMs, the tensor copy engine's loads included), l2_write_B =
# lts__t_sectors_srcunit_tex_op_write x 32, red_B = lts__t_sectors_srcunit_tex_op_red x 32.  The rule:
#   (sm_read_B + red_B) / (nbh x counter_read_B)  and  (l2_write_B + red_B) / (nbh x counter_write_B)
# within 1% of 1 (column ok).  Exit 77 without ncu; 2 on a bad configuration line.
set -euo pipefail
BIN=${1:?usage: bench/ncu_heads.sh BIN_DIR OUT_CSV [CONFIG_FILE]}
OUT=${2:?usage: bench/ncu_heads.sh BIN_DIR OUT_CSV [CONFIG_FILE]}
HERE=$(cd "$(dirname "$0")/.." && pwd)
CONF=${3:-$HERE/bench/ncu_heads.conf}
# shellcheck source=scripts/ncu_common.sh
. "$HERE/scripts/ncu_common.sh"
ncu_find ncu_heads.sh
[ -f "$CONF" ] || { echo "ncu_heads.sh: $CONF: no such configuration file" >&2; exit 2; }
SMRA=l1tex__m_xbar2l1tex_read_sectors.sum
L2W=lts__t_sectors_srcunit_tex_op_write.sum
RED=lts__t_sectors_srcunit_tex_op_red.sum
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
{
  echo "# ncu_heads.sh: Nsight Compute SM<->L2 traffic of a fast kernel over nbh heads against nbh x its counters of one head"
  echo "# commit: ${FLASHLAB_COMMIT:-unknown}"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader 2>/dev/null | head -1)"
  echo "# ncu: $("$NCU" --version | tail -1)"
  echo "# ncu options: --cache-control all --clock-control none --metrics $SMRA,$L2W,$RED; three calls, one call's bytes = the sums / 3"
  echo "# rule: read_ratio = (sm_read_B + red_B) / (nbh x counter_read_B); write_ratio = (l2_write_B + red_B) / (nbh x counter_write_B); ok within 1%"
  echo "# command: $0 $*"
  echo "version,pass,dtype,N,d,Br,Bc,nbh,causal,counter_read_B,counter_write_B,sm_read_B,l2_write_B,red_B,read_ratio,write_ratio,ok"
} >"$OUT.tmp"
grep -v -E '^\s*(#|$)' "$CONF" | while read -r ver dtype d Br Bc N nbh causal pass kre; do
  case "$pass:$causal" in fwd:0|fwd:1|bwd:0|bwd:1) ;; *) echo "ncu_heads.sh: $CONF: pass must be fwd or bwd and causal 0 or 1" >&2; exit 2 ;; esac
  args="run --version $ver --algo flash2 --dtype $dtype --N $N --d $d --Br $Br --Bc $Bc --no-check"
  [ "$pass" = bwd ] && args="$args --bwd"
  [ "$causal" = 1 ] && args="$args --causal"
  # shellcheck disable=SC2086
  line=$("$BIN/flashlab-gpu" $args | grep '^bytes:') || { echo "ncu_heads.sh: counters run failed: $args" >&2; continue; }
  "$NCU" --cache-control all --clock-control none --kernel-name "regex:$kre" --print-units base --csv --page raw \
    --metrics "$SMRA,$L2W,$RED" python3 "$HERE/bench/run_forward.py" "$BIN/libflashlab_kernels.so" "$ver" "$dtype" "$d" \
    "$Br" "$Bc" "$N" "$nbh" "$causal" 3 "$pass" >"$TMP/n.csv" 2>"$TMP/n.err" || true
  read -r smr n < <(msum "$TMP/n.csv" "$SMRA")
  read -r l2w _ < <(msum "$TMP/n.csv" "$L2W")
  read -r red _ < <(msum "$TMP/n.csv" "$RED")
  if [ -z "$smr" ] || [ -z "$l2w" ] || [ "$n" -eq 0 ] || [ $((n % 3)) -ne 0 ]; then
    echo "ncu_heads.sh: no metrics (or launches not three calls' worth: $n) for v$ver $pass $dtype N=$N d=$d nbh=$nbh:" >&2
    tail -4 "$TMP/n.err" >&2; continue
  fi
  python3 - "$line" "$ver,$pass,$dtype,$N,$d,$Br,$Bc,$nbh,$causal" "$smr" "$l2w" "${red:-0}" "$n" "$nbh" >>"$OUT.tmp" <<'EOF'
import sys
line, key, smr, l2w, red, n, nbh = sys.argv[1:]
kv = dict(x.split('=') for x in line.split()[1:])
calls, nbh = 3, int(nbh)
smr_b, l2w_b, red_b = (float(x) * 32 / calls for x in (smr, l2w, red or 0))   # one call's bytes
cr, cw = int(kv['counter_read']), int(kv['counter_write'])
rr, wr = (smr_b + red_b) / (nbh * cr), (l2w_b + red_b) / (nbh * cw)
ok = abs(rr - 1) <= 0.01 and abs(wr - 1) <= 0.01
print(f"{key},{cr},{cw},{smr_b:.0f},{l2w_b:.0f},{red_b:.0f},{rr:.6f},{wr:.6f},{int(ok)}")
EOF
  tail -1 "$OUT.tmp"
done
mv "$OUT.tmp" "$OUT"
