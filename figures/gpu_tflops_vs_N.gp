# gpu_tflops_vs_N.gp: throughput of our kernels and PyTorch SDPA's backends against N, measured
# side by side in one process on the same inputs (bench/gpu_sdpa.py -> figures/data/gpu_sdpa.csv).
# Four panels: d = 64 and 128, no mask and causal; dtype fp16 or bf16 and pass fwd or bwd chosen
# by variables.  For each of our versions the best tile at each N is drawn (the CSV has them all).
# The dashed line is the H200's dense fp16/bf16 tensor-core peak, 989 TFLOP/s (NVIDIA's H200
# datasheet, ../shared/anchors/references-2026-12.md): the physical limit every curve is read against.
# odd=1 draws the odd shapes (bench/gpu_sdpa.py --shapes odd: N = 1000, 3000, 5000, 12000);
# v12=1 draws version 12's forward runs on all of them (figures/data/gpu_sdpa_v12_run1.csv), v13=1
# version 13's backward runs (figures/data/gpu_sdpa_v13_run1.csv; pass='bwd').
#
# usage (from the repository root):
#   gnuplot -e "fmt='png'; out='figures/gpu_tflops_fwd_fp16.png'; pass='fwd'; dt='fp16'" figures/gpu_tflops_vs_N.gp
#   gnuplot -e "fmt='png'; out='figures/gpu_tflops_odd_fwd_bf16.png'; pass='fwd'; dt='bf16'; odd=1" figures/gpu_tflops_vs_N.gp
#   gnuplot -e "fmt='png'; out='figures/gpu_tflops_v12_fwd_bf16.png'; pass='fwd'; dt='bf16'; v12=1" figures/gpu_tflops_vs_N.gp
#   gnuplot -e "fmt='png'; out='figures/gpu_tflops_v13_bwd_fp16.png'; pass='bwd'; dt='fp16'; v13=1" figures/gpu_tflops_vs_N.gp
load 'figures/style.gp'
call 'figures/term.gp'
if (!exists("pass")) pass = 'fwd'
if (!exists("dt")) dt = 'fp16'
if (!exists("odd")) odd = 0
if (!exists("v12")) v12 = 0
if (!exists("v13")) v13 = 0
data = v13 ? 'figures/data/gpu_sdpa_v13_run1.csv' : v12 ? 'figures/data/gpu_sdpa_v12_run1.csv' : odd ? 'figures/data/gpu_sdpa_odd_run1.csv' : 'figures/data/gpu_sdpa.csv'
peak = 989.0
set datafile separator ','
set datafile commentschars '#'
# best TFLOP/s per (impl, d, N, causal) for this pass and dtype: impl,d,N,causal,tflops
best = sprintf("< awk -F, '!/^#/ && $1!=\"impl\" && $3==\"%s\" && $4==\"%s\" {k=$1\",\"$8\",\"$7\",\"$9; if (!(k in b) || $14>b[k]) b[k]=$14} END {for (k in b) print k\",\"b[k]}' %s | sort -t, -k1,1 -k2,2n -k4,4n -k3,3n", pass, dt, data)
set logscale x 2
set xrange [800:20000]
if (v12 || v13) { set xtics (1000, 2048, 5000, 16384) } else { if (odd) { set xtics (1000, 3000, 5000, 12000) } else { set xtics (1024, 2048, 4096, 16384) } }
set yrange [0:*]
set offsets 0, 0, graph 0.5, 0   # room above the curves for the key
set key top left font ',8' maxrows 5
set multiplot layout 2,2 title sprintf('%s attention, %s, 16 heads, %s, one NVIDIA H200', pass eq 'fwd' ? 'Forward' : 'Backward', dt, v12 || v13 ? 'N = 1000-16384, odd ones included' : odd ? 'odd N, batch x heads = 720, 176, 80, 48' : 'batch x N = 32k-64k tokens') font ',11'
impls = 'sdpa-cudnn sdpa-fa2 sdpa-efficient sdpa-math ours-v7-flash2 ours-v10-flash2 ours-v12-flash2 ours-v9-flash2 ours-v8-standard ours-v11-standard'
titles = 'SDPA-cuDNN SDPA-FA2 SDPA-mem-efficient SDPA-math ours-v7-(mma.sync) ours-v10-(wgmma) ours-v12-(warp-specialized,-TMA) ours-v9-(tiled-bwd) ours-v8-(materializing) ours-v11-(materializing-bwd)'
colors = '#7f7f7f #1f77b4 #17becf #d62728 #2ca02c #006400 #e377c2 #9467bd #ff7f0e #ff7f0e'
types = '4 5 6 7 9 11 15 9 13 13'
if (v12) {  # the version-12 runs (run 45) hold these three only
  impls = 'sdpa-cudnn sdpa-fa2 ours-v12-flash2'
  titles = 'SDPA-cuDNN SDPA-FA2 ours-v12-(warp-specialized,-TMA)'
  colors = '#7f7f7f #1f77b4 #e377c2'
  types = '4 5 15'
}
if (v13) {  # the version-13 runs hold these three only
  impls = 'sdpa-cudnn sdpa-fa2 ours-v13-flash2'
  titles = 'SDPA-cuDNN SDPA-FA2 ours-v13-(wgmma,-warp-specialized)'
  colors = '#7f7f7f #1f77b4 #e377c2'
  types = '4 5 15'
}
do for [dd in '64 128'] {
  do for [cz in '0 1'] {
    set title sprintf('d = %s, %s', dd, cz eq '0' ? 'no mask' : 'causal') font ',10'
    set ylabel 'TFLOP/s'
    set xlabel 'N'
    plot for [i=1:words(impls)] best using ((strcol(1) eq word(impls, i) && strcol(2) eq dd && strcol(4) eq cz) ? $3 : 1/0):5 \
         with linespoints lw 2 pt (word(types, i)+0) ps 0.9 lc rgb word(colors, i) title word(titles, i), \
         peak with lines dt 2 lw 1.5 lc rgb '#000000' title 'dense peak 989'
  }
}
unset multiplot
