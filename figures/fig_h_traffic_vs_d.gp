# fig_h_traffic_vs_d.gp: (h) HBM traffic against head dimension d = 64 .. 1024, N = 4096, forward,
# one head, at the fp16 SRAM of the GPU presets (one panel per distinct M): standard, flash1,
# flash2 and smallcache at their default rules, the optimum of `flashlab optimize` (docs/model.md
# §7) and the lower bound of docs/bounds.md, with the boundary d = sqrt(M) (M = d^2) marked: right
# of it a head is in the small-cache regime, Theta(N^2 d / sqrt(M)).
# CSV columns (data): N,d,M,standard,flash1,flash2,smallcache,optimum,optimum_algo,opt_Br,opt_Bc,
# lower_bound,floor,product ('-' where a schedule does not fit).
# Variables (gnuplot -e): data, Ms (the panels' M), Mnames (their presets), fmt, out.
# Regenerate: `flashlab plot --out DIR` (or `flashlab report`).
load 'style.gp'
if (!exists("fmt")) fmt = 'png'
if (!exists("Ms")) Ms = '98304'
if (!exists("Mnames")) Mnames = 'a100'
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,10' size 10in,3.8in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,12' size 1500,570 background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,11' size 1600,640 background rgb 'white' }
set output out
set datafile separator ','
set datafile missing '-'
set style line 9 lc rgb '#17becf' lw 2 pt 3 ps 0.9    # smallcache
set style line 10 lc rgb '#000000' lw 2.5 pt 4 ps 1.0 # optimum
N = 4096
set logscale x 2
set logscale y 10
set xrange [56:1200]
set xtics (64, 128, 256, 512, 1024)
set format y '10^{%L}'
set xlabel 'head dimension d'
set ylabel 'HBM accesses (elements, reads + writes)'
set key top left font ',9' spacing 1.0 maxrows 6 width -1
set multiplot layout 1,words(Ms) title sprintf('(h) HBM traffic vs head dimension d, N = %d, forward, fp16 SRAM of the presets', N)
do for [i=1:words(Ms)] {
    MM = word(Ms, i) + 0
    dstar = sqrt(MM)
    set title sprintf('%s: M = %d (M = d^2 at d = %.0f)', word(Mnames, i), MM, dstar)
    unset arrow
    unset label
    set arrow from dstar, graph 0 to dstar, graph 1 nohead dt 2 lw 1.5 lc rgb '#666666'
    set label 'M = d^2' at dstar, graph 0.06 offset 0.6,0 font ',10'
    set label 'small cache: {/Symbol Q}(N^2d/{/Symbol \326}M)' at graph 0.97, graph 0.06 right font ',9'
    sel(col) = ($3 == MM) ? column(col) : NaN
    plot data u 2:(sel(4)) w lp ls 1 t 'standard', \
         data u 2:(sel(5)) w lp ls 2 t 'flash1', \
         data u 2:(sel(6)) w lp ls 3 t 'flash2', \
         data u 2:(sel(7)) w lp ls 9 t 'smallcache', \
         data u 2:(sel(8)) w lp ls 10 t 'optimum (optimize)', \
         data u 2:(sel(12)) w l ls 5 lw 2.5 t 'lower bound (docs/bounds.md)'
}
unset multiplot
