# lab5_passes.gp: lab 5's forward and backward traffic against the SRAM size M, for standard
# attention (which saves P and moves S, P, dP, dS: Θ(N²) per pass) and flash2 (which saves L and
# recomputes S and P: Θ(N²d²/M) per pass).  Top: HBM elements of each pass and of both; the
# vertical line is the smallest M of the sweep where flash2's two passes move less than
# standard's (M_cross, lab 5 exercise 4).  Bottom: the backward's traffic over the forward's.
# Data: the student's sweep (labkit.lab5.figure), checked against fl.run by labkit.lab5.
#
# variables: figdir, data (rows: M std_fwd std_bwd flash2_fwd flash2_bwd), N, d, cross (0: none),
#   fmt, out
load figdir.'/style.gp'
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,9' size 5in,5.2in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,11' size 800,860 background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,10' size 800,860 background rgb 'white' }
set output out
set multiplot layout 2, 1 margins 0.12, 0.96, 0.07, 0.95 spacing 0, 0.08
set logscale x 2
set format x '2^{%L}'
set logscale y
set format y '10^{%L}'
set xrange [*:*] noextend
set ylabel 'HBM reads + writes (elements)'
set title sprintf('N = %d, d = %d: forward and backward traffic against M', N, d)
set key top right font ',9'
if (cross > 0) {
  set arrow 1 from cross, graph 0 to cross, graph 1 nohead dt 3 lc rgb '#555555'
  set label 1 sprintf('M_{cross} = %d', cross) at cross, graph 0.05 left offset 0.5, 0 font ',9'
}
plot data using 1:2 with linespoints ls 1 dt 2 pt 6 title 'standard forward', \
     data using 1:3 with linespoints ls 1 title 'standard backward', \
     data using 1:($2 + $3) with lines ls 1 lw 4 dt 3 title 'standard fwd + bwd', \
     data using 1:4 with linespoints ls 3 dt 2 pt 8 title 'flash2 forward', \
     data using 1:5 with linespoints ls 3 title 'flash2 backward', \
     data using 1:($4 + $5) with lines ls 3 lw 4 dt 3 title 'flash2 fwd + bwd'
unset title
unset label 1
unset logscale y
set format y '%g'
set xlabel 'SRAM size M (elements)'
set ylabel 'backward / forward'
set yrange [0:*]
set key top right
plot data using 1:($3 / $2) with linespoints ls 1 title 'standard', \
     data using 1:($5 / $4) with linespoints ls 3 title 'flash2'
unset multiplot
