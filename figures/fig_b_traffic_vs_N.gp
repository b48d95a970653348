# fig_b_traffic_vs_N.gp: (b) HBM accesses against sequence length N at fixed M and d, with the
# fitted c*N^2*d^2/M line (flash1) and the lower bound of docs/bounds.md at segment length R = M:
# max(4Nd, M (ceil(N^2 d / (M^2/d + M^1.5)) - 1)).
# Variables (gnuplot -e): data, c1, M, d, fmt, out.  Regenerate: `flashlab plot --out DIR`.
load 'style.gp'
load 'term.gp'
set datafile separator ','
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '10^{%L}'
set xlabel 'sequence length N (tokens)'
set ylabel 'HBM accesses (elements, reads + writes)'
set title sprintf('(b) HBM traffic vs N, d = %d, M = %d elements', d, M)
set key top left
sel(a) = (strcol(1) eq a) ? $9 : NaN
set samples 200
set xrange [400:80000]
prod(n) = M * (ceil(n*n*d / (M*M/d + M**1.5)) - 1)
plot data u 2:(sel('standard')) w lp ls 1 title 'standard', \
     data u 2:(sel('flash1')) w lp ls 2 title 'flash1', \
     data u 2:(sel('flash2')) w lp ls 3 title 'flash2', \
     c1 * x*x*d*d / M w l ls 4 title sprintf('fit %.1f N^2d^2/M', c1), \
     (4*x*d > prod(x) ? 4*x*d : prod(x)) w l ls 5 title 'lower bound'
