# fig_e_frontier.gp: (e) the attainable-traffic frontier against M: the fewest HBM accesses
# `flashlab optimize` found at each M (every point a simulated count), beside flash1 (the
# paper's block rule) and flash2 (square blocks) at their defaults, and the lower bound
# max(4Nd, N^2 d^2/M).  CSV columns: N,d,M,best_algo,Br,Bc,best_total,flash1_total,
# flash2_total,lower_bound,constant.
# Variables (gnuplot -e): data, N, d, fmt, out.
# Regenerate: flashlab optimize --N 4096 --d 64 --M 512:262144:x2 --format csv > figures/data/optimize_frontier.csv
load 'style.gp'
load 'term.gp'
set datafile separator ','
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '10^{%L}'
set xlabel 'SRAM size M (elements)'
set ylabel 'HBM accesses (elements, reads + writes)'
set title sprintf('(e) attainable traffic vs M (optimize), N = %d, d = %d', N, d)
set key top right
set style line 8 lc rgb '#000000' lw 2.5 pt 4 ps 1.0
plot data u 3:8 w lp ls 2 title 'flash1 (paper rule)', \
     data u 3:9 w lp ls 3 title 'flash2 (square blocks)', \
     data u 3:7 w lp ls 8 title 'optimize (best found)', \
     data u 3:10 w l ls 5 title 'lower bound max(4Nd, N^2d^2/M)'
