# fig_c_traffic_vs_Bc.gp: (c) HBM accesses against the K/V block size Bc at N = 1024, d = 64,
# A100 SRAM (the FlashAttention paper's Figure 2, middle, as the model sees it).  Larger blocks,
# fewer passes over Q and O (flash1) or over K and V (flash2); blocks that do not fit are skipped.
# Variables (gnuplot -e): data, M, fmt, out.  Regenerate: `flashlab plot --out DIR`.
load 'style.gp'
load 'term.gp'
set datafile separator ','
set logscale x 2
set logscale y 10
set format x '%g'
set format y '10^{%L}'
set xlabel 'block size B_c (rows of K and V per tile)'
set ylabel 'HBM accesses (elements, reads + writes)'
set title sprintf('(c) HBM traffic vs block size, N = 1024, d = 64, M = %d', M)
set key top right
set yrange [3e5:3e7]
set label 1 "flash2's traffic depends on B_r only (K, V re-read once per query block)" at 20, 6.2e5 font ',10' tc rgb '#2ca02c'
sel(a) = (strcol(1) eq a) ? $9 : NaN
plot data u 6:(sel('flash1')) w lp ls 2 title 'flash1 (B_r = 64)', \
     data u 6:(sel('flash2')) w lp ls 3 title 'flash2 (B_r by rule B2)'
