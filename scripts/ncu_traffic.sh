#!/usr/bin/env bash
# ncu_traffic.sh: Nsight Compute's traffic counters against the kernels' byte counters, for every
# version of the ladder, forward and backward.
#
# usage: scripts/ncu_traffic.sh BIN_DIR OUT_CSV [CONFIG_FILE]
#   BIN_DIR     holds flashlab-gpu (counters) and flashlab-gpu-timing (no counters)
#   CONFIG_FILE lines "version algo dtype N d Br Bc pass kernel_regex launch_skip [sm_read [causal]]"
#               (default kernels/ncu_versions.conf); kernel_regex selects the schedule's kernels
#               (not the forward a backward runs first, nor the harness's probes), launch_skip skips
#               that many matching launches first (version 11's backward shares kernels with its
#               forward); sm_read "lsu" (the default) or "all": which SM read metric the row uses;
#               causal: the bottom-right causal mask (flashlab-gpu run --causal)
#
# For each configuration, with ncu --cache-control all --clock-control none (caches flushed before
# each kernel; clocks as found, never set), summed over the schedule's kernels:
#   sm_read_B   l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld x 32: the sectors the SMs received
#               from L2 for their loads (cp.async included; the SM end of the link); for rows marked
#               sm_read=all (versions 12, 13: the tensor copy engine's loads, which that metric does
#               not see) l1tex__m_xbar2l1tex_read_sectors x 32, every sector the SMs received
#   l2_write_B  lts__t_sectors_srcunit_tex_op_write x 32: the sectors the SMs wrote to L2
#   red_B       lts__t_sectors_srcunit_tex_op_red x 32: reductions done in L2 (version 9's dQ +=);
#               each reduced element is one read and one write, as the counters count it
#   l2_read_B, dram_read_B, dram_write_B  for context, when NCU_CONTEXT_METRICS names them (more
#               metrics, more replay passes; docs/validation.md explains why they differ)
# and from the counters build (flashlab-gpu run), the counted data bytes read and written and the
# synchronisation words of the wavefront versions (2, 4, 5): each poll of a flag or of the error
# word and each release is one 32-byte sector at L2, not data.  The rule checked:
#   (sm_read_B + red_B) / (counter_read_B + 32 flag_reads)   and
#   (l2_write_B + red_B) / (counter_write_B + 32 flag_writes)   within 1% of 1 (sector rounding).
# The polls differ from run to run, so for versions 2, 4 and 5 the counters build itself runs
# under ncu, one metric a run (one pass: the counts and the metric come from the same execution),
# and its local memory must be 0 bytes (no spills in the loads metric).  Other versions: the
# timing build under ncu, all metrics, and the counters from a separate run (their traffic is
# deterministic).  ncu may live under /opt/nvidia/nsight-compute/*/ncu (not on PATH).
set -euo pipefail
BIN=${1:?usage: scripts/ncu_traffic.sh BIN_DIR OUT_CSV [CONFIG_FILE]}
OUT=${2:?usage: scripts/ncu_traffic.sh BIN_DIR OUT_CSV [CONFIG_FILE]}
CONF=${3:-$(dirname "$0")/../kernels/ncu_versions.conf}
# shellcheck source=scripts/ncu_common.sh
. "$(dirname "$0")/ncu_common.sh"
ncu_find ncu_traffic.sh
[ -f "$CONF" ] || { echo "ncu_traffic.sh: $CONF: no such configuration file" >&2; exit 2; }
SMR=l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum
SMRA=l1tex__m_xbar2l1tex_read_sectors.sum   # every sector into the SMs: LSU and the tensor copy engine
L2W=lts__t_sectors_srcunit_tex_op_write.sum
RED=lts__t_sectors_srcunit_tex_op_red.sum
CTX=${NCU_CONTEXT_METRICS:-}   # e.g. "lts__t_sectors_srcunit_tex_op_read.sum dram__bytes_read.sum dram__bytes_write.sum"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# keep only the metrics this ncu knows for this GPU (a missing one is reported, not fatal; when the
# query itself gives nothing usable, all are kept)
"$NCU" --query-metrics >"$TMP/known.txt" 2>&1 || true
known() { ! grep -q "${SMR%.sum}" "$TMP/known.txt" || grep -q "^ *${1%.sum}\b" "$TMP/known.txt"; }
ALL=""
for m in $SMR $SMRA $L2W $RED $CTX; do
  if known "$m"; then ALL="$ALL${ALL:+,}$m"; else echo "ncu_traffic.sh: this ncu has no metric $m: left out" >&2; fi
done
{
  echo "# ncu_traffic.sh: Nsight Compute SM<->L2 traffic of every version against its byte counters"
  echo "# commit: ${FLASHLAB_COMMIT:-unknown}"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "# ncu: $("$NCU" --version | tail -1)"
  echo "# ncu options: --cache-control all --clock-control none --metrics <below> --print-units base --csv --page raw"
  echo "# metrics: sm_read_B = $SMR x 32 (sm_read_metric all: $SMRA x 32); l2_write_B = $L2W x 32; red_B = $RED x 32; l2_read_B, dram_*: $CTX"
  echo "# counters: flashlab-gpu run --no-check (counter_*_B: data; flag_reads/writes: synchronisation words, 32 B a sector each)"
  echo "# rule: read_ratio = (sm_read_B + red_B) / (counter_read_B + 32 flag_reads); write_ratio = (l2_write_B + red_B) / (counter_write_B + 32 flag_writes); ok within 1%"
  echo "# source: versions 2, 4, 5 (wavefront, polls vary by run): the counters build under ncu, one metric a run (passes: ncu's count when it printed one), local memory 0; others: the timing build, counters from a separate run"
  echo "# command: $0 $*"
  echo "version,algo,pass,dtype,N,d,Br,Bc,M_eff,model_read_B,model_write_B,counter_read_B,counter_write_B,flag_reads,flag_writes,sm_read_B,l2_write_B,red_B,l2_read_B,dram_read_B,dram_write_B,read_ratio,write_ratio,ok,source,passes,local_bytes,sm_read_metric,causal"
} >"$OUT.tmp"

passes() { { grep -o '[0-9]* pass' "$1" || true; } | awk '{print $1}' | sort -n | tail -1; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

grep -v -E '^\s*(#|$)' "$CONF" | while read -r ver algo dtype N d Br Bc pass kre skip smsrc extra; do
  smsrc=${smsrc:-lsu}
  case ${extra:-} in "") causal=0 ;; causal) causal=1 ;; *) echo "ncu_traffic.sh: $CONF: the 12th field must be causal, not $extra" >&2; exit 2 ;; esac
  case $smsrc in lsu) SMRX=$SMR ;; all) SMRX=$SMRA ;; *) echo "ncu_traffic.sh: $CONF: sm_read must be lsu or all, not $smsrc" >&2; exit 2 ;; esac
  args="run --version $ver --algo $algo --dtype $dtype --N $N --d $d --Br $Br --Bc $Bc --no-check"
  [ "$pass" = bwd ] && args="$args --bwd"
  [ "$causal" = 1 ] && args="$args --causal"
  sel=(--kernel-name "regex:$kre" --launch-skip "${skip:-0}")
  base=(--cache-control all --clock-control none --print-units base --csv --page raw)
  case $ver in
    2|4|5)  # counters build under ncu: the counts of the same execution as the metric
      # (ncu passes on the program's exit status; the metrics are judged by their presence)
      "$NCU" "${base[@]}" "${sel[@]}" --metrics $SMR "$BIN/flashlab-gpu" $args >"$TMP/a.csv" 2>"$TMP/a.err" || true
      "$NCU" "${base[@]}" "${sel[@]}" --metrics $L2W "$BIN/flashlab-gpu" $args >"$TMP/b.csv" 2>"$TMP/b.err" || true
      la=$(grep '^bytes:' "$TMP/a.csv" || true); lb=$(grep '^bytes:' "$TMP/b.csv" || true)
      [ -n "$la" ] && [ -n "$lb" ] || { echo "ncu_traffic.sh: no counts under ncu: $args" >&2; continue; }
      smr=$(msum "$TMP/a.csv" $SMR | cut -d" " -f1); l2w=$(msum "$TMP/b.csv" $L2W | cut -d" " -f1); red=0; l2r=; drr=; drw=
      fr=$(field "$la" polls); fw=$(field "$lb" flag_writes); line=$la
      src=counters-under-ncu; np=$(cat "$TMP/a.csv" "$TMP/a.err" "$TMP/b.csv" "$TMP/b.err" >"$TMP/ab"; passes "$TMP/ab")
      loc=$(printf '%s\n%s\n' "$(field "$la" local_bytes)" "$(field "$lb" local_bytes)" | sort -n | tail -1) ;;
    *)
      line=$("$BIN/flashlab-gpu" $args | grep '^bytes:') || { echo "ncu_traffic.sh: counters run failed: $args" >&2; continue; }
      "$NCU" "${base[@]}" "${sel[@]}" --metrics "$ALL" "$BIN/flashlab-gpu-timing" $args >"$TMP/t.csv" 2>"$TMP/t.err" || true
      smr=$(msum "$TMP/t.csv" $SMRX | cut -d" " -f1); l2w=$(msum "$TMP/t.csv" $L2W | cut -d" " -f1); red=$(msum "$TMP/t.csv" $RED | cut -d" " -f1)
      l2r=$(msum "$TMP/t.csv" lts__t_sectors_srcunit_tex_op_read.sum | cut -d" " -f1); drr=$(msum "$TMP/t.csv" dram__bytes_read.sum | cut -d" " -f1)
      drw=$(msum "$TMP/t.csv" dram__bytes_write.sum | cut -d" " -f1)
      fr=$(field "$line" polls); fw=$(field "$line" flag_writes); src=timing-build
      np=$(cat "$TMP/t.csv" "$TMP/t.err" >"$TMP/ab"; passes "$TMP/ab"); loc=$(field "$line" local_bytes) ;;
  esac
  if [ -z "$smr" ] || [ -z "$l2w" ]; then
    echo "ncu_traffic.sh: no metrics for $args:" >&2; cat "$TMP"/*.err 2>/dev/null | tail -4 >&2; continue
  fi
  python3 - "$line" "$ver,$algo,$pass,$dtype,$N,$d,$Br,$Bc" "$smr" "$l2w" "${red:-0}" "$l2r" "$drr" "$drw" "$fr" "$fw" "$src" "$np" "$loc" "$smsrc" "$causal" >>"$OUT.tmp" <<'EOF'
import sys
line, key, smr, l2w, red, l2r, drr, drw, fr, fw, src, np, loc, smsrc, causal = sys.argv[1:]
kv = dict(x.split('=') for x in line.split()[1:])
S = lambda x: float(x) * 32 if x else None
smr_b, l2w_b, red_b, l2r_b = S(smr), S(l2w), S(red) or 0.0, S(l2r)
cr, cw, fr, fw = int(kv['counter_read']), int(kv['counter_write']), int(fr or 0), int(fw or 0)
rr = (smr_b + red_b) / (cr + 32 * fr) if smr_b is not None else None
wr = (l2w_b + red_b) / (cw + 32 * fw) if l2w_b is not None else None
ok = rr is not None and wr is not None and abs(rr - 1) <= 0.01 and abs(wr - 1) <= 0.01
f = lambda x: "" if x is None or x == "" else f"{float(x):.0f}"
print(f"{key},{kv['M_eff']},{kv['model_read']},{kv['model_write']},{cr},{cw},{fr},{fw},{f(smr_b)},{f(l2w_b)},{f(red_b)},"
      f"{f(l2r_b)},{f(drr)},{f(drw)},{'' if rr is None else f'{rr:.6f}'},{'' if wr is None else f'{wr:.6f}'},"
      f"{int(ok)},{src},{np},{loc},{smsrc},{causal}")
EOF
  tail -1 "$OUT.tmp"
done
mv "$OUT.tmp" "$OUT"
python3 - "$OUT" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
bad = [r for r in rows if r['ok'] != '1']
print(f"ncu_traffic.sh: {len(rows)} configurations, {len(rows) - len(bad)} within 1% of the counters (reads and writes)")
for r in bad:
    print(f"  v{r['version']} {r['algo']} {r['pass']}: read {r['read_ratio']}, write {r['write_ratio']}")
sys.exit(1 if bad else 0)
EOF
