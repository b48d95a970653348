# fig_d_ratio_vs_M.gp: (d) the ratio of standard attention's HBM traffic to flash1's and
# flash2's against SRAM size M, N = 1k, 4k, 16k, d = 64.
# Variables (gnuplot -e): data = ratio CSV written by `flashlab plot` (N,d,M,standard,flash1,
# flash2,std_over_flash1,std_over_flash2), fmt, out.  Regenerate: `flashlab plot --out DIR`.
load 'style.gp'
load 'term.gp'
set datafile separator ','
Ns = "1024 4096 16384"
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '%g'
set xlabel 'SRAM size M (elements)'
set ylabel 'standard / flash HBM traffic (ratio)'
set title '(d) standard / flash traffic vs SRAM size M, d = 64 (curves end at M = Nd)'
set key top left
set xrange [1500:3e6]
sel(n, col) = ($1 == n) ? column(col) : NaN
plot for [i=1:3] data u 3:(sel(word(Ns,i)+0, 7)) w lp ls 2 title (i==1 ? 'standard / flash1' : ''), \
     for [i=1:3] data u 3:(sel(word(Ns,i)+0, 8)) w lp ls 3 title (i==1 ? 'standard / flash2' : ''), \
     data u 3:($3 == $1*$2 ? $7 : NaN):(sprintf('N = %dk', $1/1024)) w labels left offset 0.8,0.5 font ',10' notitle, \
     data u 3:($3 == $1*$2 ? $8 : NaN):(sprintf('N = %dk', $1/1024)) w labels left offset 0.8,-0.5 font ',10' notitle, \
     1 w l ls 4 title 'equal traffic'
