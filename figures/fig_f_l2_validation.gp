# fig_f_l2_validation.gp: (f) the three-level model (HBM, 60 MB L2, SRAM; `flashlab l2`) against
# the DRAM bytes Nsight Compute measured on the H200 (dram__bytes_read.sum), one point per kernel
# configuration of figures/data/l2_validation.csv, beside the two-level model's HBM reads taken
# as DRAM reads.  On the diagonal the prediction is exact; the band is +-10 %.
# Variables (gnuplot -e): data, fmt, out.
# Regenerate: gnuplot -e "data='data/l2_validation.csv'; fmt='png'; out='fig_f_l2_validation.png'" fig_f_l2_validation.gp
load 'style.gp'
load 'term.gp'
set datafile separator ','
set logscale xy 10
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [1e5:1e12]
set yrange [1e5:1e12]
set size square
set xlabel 'measured DRAM reads (bytes, ncu dram\_\_bytes\_read.sum)'
set ylabel 'predicted DRAM reads (bytes)'
set title '(f) DRAM reads: three-level model vs H200 measurement'
set key top left
plot x w l ls 4 title 'exact', \
     1.1*x w l lc rgb '#bbbbbb' dt 3 title '+-10 %', 0.9*x w l lc rgb '#bbbbbb' dt 3 notitle, \
     data u 8:11 w p pt 6 ps 1.2 lc rgb '#888888' title 'two-level model (HBM reads, no L2)', \
     data u 8:(strcol(1) eq 'flash1' ? $9 : NaN) w p ls 2 title 'three-level: flash1', \
     data u 8:(strcol(1) eq 'flash2' ? $9 : NaN) w p ls 3 title 'three-level: flash2', \
     data u 8:(strcol(1) eq 'standard' ? $9 : NaN) w p ls 6 title 'three-level: standard'
