# fig_g_bounds_vs_M.gp: (g) HBM traffic against SRAM size M on both sides of M = d^2, N = 4096,
# one head, the forward (top) and the backward alone (bottom) at d = 64 (left) and d = 128
# (right): standard, flash1, flash2 and smallcache at their default rules, the optimum of
# `flashlab optimize` (docs/model.md §7) and the lower bound of docs/bounds.md, with the boundary
# M = d^2 marked; and, forward, the H200 kernels' byte counters (figures/data/gpu_validate.csv:
# fp16 forward, N = 4096, no mask) at the footprint M_eff of their own tiles, where they were
# measured.
# CSV columns (data): N,d,M,pass,standard,flash1,flash2,smallcache,optimum,optimum_algo,opt_Br,
# opt_Bc,lower_bound,floor,product ('-' where a schedule does not fit).
# Variables (gnuplot -e): data, gpu (the GPU records, or '' for none), fmt, out.
# Regenerate: `flashlab plot --out DIR` (or `flashlab report`).
load 'style.gp'
if (!exists("fmt")) fmt = 'png'
if (!exists("gpu")) gpu = ''
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,10' size 10in,7.4in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,12' size 1500,1110 background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,11' size 1600,1240 background rgb 'white' }
set output out
set datafile separator ','
set datafile missing '-'
set style line 9 lc rgb '#17becf' lw 2 pt 3 ps 0.9    # smallcache
set style line 10 lc rgb '#000000' lw 2.5 pt 4 ps 1.0 # optimum
N = 4096
Ds = "64 128"
set logscale x 2
set logscale y 10
set yrange [1.5e5:2e11]
set format x '2^{%L}'
set format y '10^{%L}'
set xlabel 'SRAM size M (elements)'
set ylabel 'HBM accesses (elements, reads + writes)'
set key bottom left font ',9' spacing 1.0 maxrows 5 width -1
set multiplot layout 2,2 title sprintf('(g) HBM traffic vs SRAM size M on both sides of M = d^2, N = %d', N)
do for [j=1:4] {
    i = (j - 1) % 2 + 1
    ps = j <= 2 ? 'fwd' : 'bwd'
    dd = word(Ds, i) + 0
    set xrange [dd * 0.7 : N * dd * 1.4]
    set title sprintf('%s, d = %d (M from d to Nd)', ps eq 'fwd' ? 'forward' : 'backward', dd)
    unset arrow
    unset label
    set arrow from dd*dd, graph 0 to dd*dd, graph 1 nohead dt 2 lw 1.5 lc rgb '#666666'
    set label 'M = d^2' at dd*dd, graph 0.96 offset 0.6,0 font ',10'
    set label 'small cache: {/Symbol Q}(N^2d/{/Symbol \326}M)' at graph 0.03, graph 0.96 font ',9'
    set label 'large cache: {/Symbol Q}(N^2d^2/M)' at graph 0.97, graph 0.96 right font ',9'
    sel(col) = ($2 == dd && strcol(4) eq ps) ? column(col) : NaN
    gsel(a) = (strcol(1) eq 'matrix' && strcol(2) eq a && strcol(3) eq 'fwd' && strcol(5) eq 'fp16' && \
               $6 == N && $7 == dd && $10 == 0) ? $14 + $15 : NaN
    if (gpu ne '' && ps eq 'fwd') {
        plot data u 3:(sel(5)) w lp ls 1 t 'standard', \
             data u 3:(sel(6)) w lp ls 2 t 'flash1', \
             data u 3:(sel(7)) w lp ls 3 t 'flash2', \
             data u 3:(sel(8)) w lp ls 9 t 'smallcache', \
             data u 3:(sel(9)) w lp ls 10 t 'optimum (optimize)', \
             data u 3:(sel(13)) w l ls 5 lw 2.5 t 'lower bound (docs/bounds.md)', \
             gpu u 11:(gsel('standard')) w p pt 6 ps 1.6 lw 2 lc rgb '#d62728' t 'H200 counters: standard', \
             gpu u 11:(gsel('flash1')) w p pt 4 ps 1.6 lw 2 lc rgb '#1f77b4' t 'H200 counters: flash1', \
             gpu u 11:(gsel('flash2')) w p pt 8 ps 1.6 lw 2 lc rgb '#2ca02c' t 'H200 counters: flash2'
    } else {
        plot data u 3:(sel(5)) w lp ls 1 t 'standard', \
             data u 3:(sel(6)) w lp ls 2 t 'flash1', \
             data u 3:(sel(7)) w lp ls 3 t 'flash2', \
             data u 3:(sel(8)) w lp ls 9 t 'smallcache', \
             data u 3:(sel(9)) w lp ls 10 t 'optimum (optimize)', \
             data u 3:(sel(13)) w l ls 5 lw 2.5 t 'lower bound (docs/bounds.md)'
    }
}
unset multiplot
