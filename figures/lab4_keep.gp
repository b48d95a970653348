# lab4_keep.gp: lab 4's picture of a mask on the machine.  One panel per convention: the keep
# matrix of Nq queries (rows, query 0 on top) over Nk keys, cut into B x B tiles, each element
# coloured by what flash2 did with it: kept (blue), computed in a loaded tile but masked (orange:
# the work a partial tile wastes), or skipped with its whole tile (grey: never loaded, rule K2).
# The data comes from a trace of flash2 with the blocks forced (labkit.lab4.keep_figure).
#
# variables: figdir (this folder), data (n matrices of Nq rows of Nk values 0/1/2, separated by
#   two blank lines), n, Nq, Nk, B, titles (n quoted panel titles), fmt ('png'|'pdf'|'svg'), out
load figdir.'/style.gp'
h = 130 + 280 * n
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,9' size 6in,(h / 150.0)in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,11' size 900,h background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,10' size 900,h background rgb 'white' }
set output out
unset grid
set palette defined (0 '#e6e6e6', 1 '#fdae6b', 2 '#3182bd')
set cbrange [0:2]
unset colorbox
set xrange [-0.5:Nk - 0.5]
set yrange [Nq - 0.5:-0.5]
set xtics B out nomirror
set ytics B out nomirror
set size ratio -1
set for [k = 1:(Nk - 1) / B] arrow from k * B - 0.5, graph 0 to k * B - 0.5, graph 1 nohead lc rgb 'white' lw 1.5 front
set for [k = 1:(Nq - 1) / B] arrow 100 + k from graph 0, first k * B - 0.5 to graph 1, first k * B - 0.5 nohead lc rgb 'white' lw 1.5 front
unset key
set multiplot layout n, 1 margins 0.07, 0.98, 100.0 / h, 1 - 30.0 / h spacing 0, 60.0 / h
do for [p = 0:n - 1] {
  set title word(titles, p + 1) noenhanced
  set ylabel 'query i'
  if (p == n - 1) { set xlabel 'key j' } else { unset xlabel }
  if (p == n - 1) {
    set key at screen 0.5, screen 20.0 / h center bottom horizontal maxrows 1 Left reverse samplen 1.5 width 2 nobox font ',9'
    plot data index p matrix using 1:2:3 with image notitle, \
         NaN with boxes fs solid fc rgb '#3182bd' title 'kept', \
         NaN with boxes fs solid fc rgb '#fdae6b' title 'computed, then masked (in a partial tile)', \
         NaN with boxes fs solid fc rgb '#e6e6e6' title 'skipped (its tile is never loaded)'
  } else {
    plot data index p matrix using 1:2:3 with image notitle
  }
}
unset multiplot
