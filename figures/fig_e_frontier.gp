# fig_e_frontier.gp: (e) the attainable-traffic frontier against M: the fewest HBM accesses
# `flashlab optimize` attains at each M (the exact optimum of its family, every point a simulated
# count), beside flash1 (the paper's block rule) and flash2 (square blocks) at their defaults,
# and the lower bound of docs/bounds.md.  CSV columns: N,d,M,pass,best_algo,Br,Bc,Bd,Br_bwd,
# Bc_bwd,Bd_bwd,best_fwd,best_bwd,best_total,flash1_total,flash2_total,lower_bound,
# best_over_bound (flash1_total, flash2_total -1 where they do not fit).
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
set title sprintf('(e) the optimum vs M (optimize), N = %d, d = %d', N, d)
set key top right
set style line 8 lc rgb '#000000' lw 2.5 pt 4 ps 1.0
plot data u 3:($15 > 0 ? $15 : NaN) w lp ls 2 title 'flash1 (paper rule)', \
     data u 3:($16 > 0 ? $16 : NaN) w lp ls 3 title 'flash2 (square blocks)', \
     data u 3:14 w lp ls 8 title 'optimize (the optimum)', \
     data u 3:17 w l ls 5 title 'lower bound (docs/bounds.md)'
