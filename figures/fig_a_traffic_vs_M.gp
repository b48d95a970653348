# fig_a_traffic_vs_M.gp: (a) HBM accesses against SRAM size M for standard, flash1, flash2 at
# N = 1k, 4k, 16k (d = 64), with the fitted c*N^2*d^2/M line (flash1) and the lower bound of
# docs/bounds.md at segment length R = M: max(4Nd, M (ceil(N^2 d / (M^2/d + M^1.5)) - 1)).
# Variables (gnuplot -e): data = CSV written by `flashlab sweep`, c1 = fitted constant (flash1),
# fmt = png|pdf|svg, out = output file.  Regenerate all figures: `flashlab plot --out DIR`.
load 'style.gp'
load 'term.gp'
set datafile separator ','
d = 64.0
Ns = "1024 4096 16384"
Nlab = "1k 4k 16k"
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '10^{%L}'
set xlabel 'SRAM size M (elements)'
set ylabel 'HBM accesses (elements, reads + writes)'
set title sprintf('(a) HBM traffic vs SRAM size M, d = %d (curves end at M = Nd)', d)
set key outside right top
set xrange [1500:4.2e6]
set yrange [1e5:2e10]
sel(a, n) = (strcol(1) eq a && $2 == n) ? $9 : NaN
fitline(n, m) = (m <= n*d) ? c1 * n*n*d*d / m : NaN
prod(n, m) = m * (ceil(n*n*d / (m*m/d + m**1.5)) - 1)
lb(n, m) = (m <= n*d) ? ((4*n*d > prod(n, m)) ? 4*n*d : prod(n, m)) : NaN
set samples 200
plot for [i=1:3] data u 4:(sel('standard', word(Ns,i)+0)) w lp ls 1 title (i==1 ? 'standard' : ''), \
     for [i=1:3] data u 4:(sel('flash1', word(Ns,i)+0)) w lp ls 2 title (i==1 ? 'flash1' : ''), \
     for [i=1:3] data u 4:(sel('flash2', word(Ns,i)+0)) w lp ls 3 title (i==1 ? 'flash2' : ''), \
     for [i=1:3] fitline(word(Ns,i)+0, x) w l ls 4 title (i==1 ? sprintf('fit %.1f N^2d^2/M', c1) : ''), \
     for [i=1:3] lb(word(Ns,i)+0, x) w l ls 5 title (i==1 ? 'lower bound' : ''), \
     data u 4:((strcol(1) eq 'standard' && $4 == $2*d) ? $9 : NaN):(sprintf('N = %dk', $2/1024)) \
          w labels left offset 0.8,0 font ',10' notitle
