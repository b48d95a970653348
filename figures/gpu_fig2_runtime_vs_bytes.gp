# gpu_fig2_runtime_vs_bytes.gp: the FlashAttention paper's Figure 2 (right: runtime against HBM
# traffic across block sizes) on the H200 for the GPT-2-medium shape (batch 64, 16 heads,
# N = 1024, d = 64, fp16): every tile of our forward kernels, versions 7 (mma.sync) and 10
# (wgmma) tiled, 8 materializing, and the backward, tiled (version 9) and materializing (11).  Filled: the model's bytes
# (equal to the kernels' byte counters, figures/data/gpu_fig2.csv); open: HBM bytes by Nsight
# Compute (dram reads + writes: re-reads of K and V hit the 60 MB L2).
#
# usage (from the repository root):
#   gnuplot -e "fmt='png'; out='figures/gpu_fig2_runtime_vs_bytes.png'" figures/gpu_fig2_runtime_vs_bytes.gp
load 'figures/style.gp'
call 'figures/term.gp'
data = 'figures/data/gpu_fig2.csv'
set datafile separator ','
set datafile commentschars '#'
set logscale xy
set xlabel 'HBM traffic (GB)'
set ylabel 'runtime (ms)'
set title 'Figure 2 on an NVIDIA H200: GPT-2 medium (B 64, H 16, N 1024, d 64, fp16)' font ',10'
set key top left font ',8'
set xrange [0.3:40]
set yrange [0.5:10]
set ytics (0.5, 0.7, 1, 1.5, 2, 3, 4, 6, 8)
v(n) = $2 == n
lab(n) = v(n) ? sprintf('%dx%d', $4, $5) : ''
plot data using (v(8) ? $9/1e9 : 1/0):7 with points ls 1 pt 7 ps 1.4 title 'standard fwd (v8): model = counters', \
     data using (v(8) ? ($11+$12)/1e9 : 1/0):7 with points ls 1 pt 6 ps 1.4 title 'standard fwd (v8): ncu DRAM', \
     data using (v(7) ? $9/1e9 : 1/0):7 with points ls 3 pt 9 ps 1.4 title 'tiled fwd (v7): model = counters', \
     data using (v(7) ? ($11+$12)/1e9 : 1/0):7 with points ls 3 pt 8 ps 1.4 title 'tiled fwd (v7): ncu DRAM', \
     data using (v(10) ? $9/1e9 : 1/0):7 with points lc rgb '#006400' pt 5 ps 1.3 title 'tiled fwd (v10): model = counters', \
     data using (v(10) ? ($11+$12)/1e9 : 1/0):7 with points lc rgb '#006400' pt 4 ps 1.3 title 'tiled fwd (v10): ncu DRAM', \
     data using (v(9) ? $9/1e9 : 1/0):7 with points ls 2 pt 11 ps 1.4 title 'tiled bwd (v9): model = counters', \
     data using (v(9) ? ($11+$12)/1e9 : 1/0):7 with points ls 2 pt 10 ps 1.4 title 'tiled bwd (v9): ncu DRAM', \
     data using (v(11) ? $9/1e9 : 1/0):7 with points ls 1 pt 13 ps 1.4 title 'standard bwd (v11): model = counters', \
     data using (v(11) ? ($11+$12)/1e9 : 1/0):7 with points ls 1 pt 12 ps 1.4 title 'standard bwd (v11): ncu DRAM', \
     data using ($9/1e9):7:(lab(7).lab(8).lab(9).lab(10).lab(11)) with labels offset 0.6,0.55 font ',7' left notitle
