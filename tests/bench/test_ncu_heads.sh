#!/usr/bin/env bash
# test_ncu_heads.sh: bench/ncu_heads.sh's arithmetic without a GPU, through a fake ncu (three launches of
# 1000 SM read sectors and 500 L2 write sectors) and a fake counters build (16000 bytes read and 8000
# written a head): 2 heads must agree (ratio 1, ok 1) and 3 heads must not (0.666667, ok 0: a wrong
# head count is caught); and without ncu the script exits 77.
#   bash tests/bench/test_ncu_heads.sh SOURCE_DIR
set -uo pipefail
SRC=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/b"
cat >"$T/bin/ncu" <<'FAKE'
#!/usr/bin/env bash
[ "$1" = --version ] && { echo "fake ncu 1.0"; exit 0; }
echo '"ID","Kernel Name","l1tex__m_xbar2l1tex_read_sectors.sum","lts__t_sectors_srcunit_tex_op_write.sum","lts__t_sectors_srcunit_tex_op_red.sum"'
echo '"","","sector","sector","sector"'
for i in 1 2 3; do echo "\"$i\",\"fl_ws_fwd\",\"1,000\",\"500\",\"0\""; done
FAKE
printf '#!/usr/bin/env bash\necho "bytes: M_eff=1 model_read=16000 model_write=8000 counter_read=16000 counter_write=8000 polls=0"\n' >"$T/b/flashlab-gpu"
chmod +x "$T/bin/ncu" "$T/b/flashlab-gpu"
printf '12 fp16 64 128 128 4096 2 0 fwd ^fl_ws_fwd\n12 fp16 64 128 128 4096 3 0 fwd ^fl_ws_fwd\n' >"$T/conf"
fails=0
PATH=$T/bin:$PATH bash "$SRC/bench/ncu_heads.sh" "$T/b" "$T/out.csv" "$T/conf" >/dev/null 2>"$T/err"
got=$(grep -v '^#' "$T/out.csv" 2>/dev/null | tail -n +2 | cut -d, -f8,15,16,17 | tr '\n' ' ')
if [ "$got" = "2,1.000000,1.000000,1 3,0.666667,0.666667,0 " ]; then echo "PASS two heads agree, three are caught"
else echo "FAIL rows: '$got' $(cat "$T/err")"; fails=$((fails + 1)); fi
if ls /opt/nvidia/nsight-compute/*/ncu >/dev/null 2>&1; then
  echo "PASS no ncu: not checked (an ncu is installed under /opt/nvidia/nsight-compute)"
else
  PATH=/usr/bin:/bin bash "$SRC/bench/ncu_heads.sh" "$T/b" "$T/out2.csv" "$T/conf" >/dev/null 2>&1
  rc=$?
  if [ "$rc" = 77 ] && [ ! -e "$T/out2.csv" ]; then echo "PASS no ncu: 77, nothing written"
  else echo "FAIL no ncu: exit $rc"; fails=$((fails + 1)); fi
fi
echo "$((2 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
