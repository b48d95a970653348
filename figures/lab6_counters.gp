# lab6_counters.gp: lab 6's byte counters against the model, per kernel version.  Each point is
# one recorded kernel run (figures/data/gpu_validate*.csv): the elements its compiled-in counters
# saw (reads + writes) over the model of that kernel (its schedule with its tiles forced, on an
# SRAM of exactly their footprint, recomputed with the C library).  Filled: rows recorded ok;
# red: rows recorded with another status (a kernel the model caught).  Points of one version are
# spread sideways so that equal ratios stay visible; the numbers on top are rows per version and,
# below them, how many of those equal the model to the element.  Data: labkit.lab6.counter_figure.
#
# variables: figdir, data (rows: x ratio ok), counts (rows: version rows equal), vmax, ymin, ymax,
#   fmt, out
load figdir.'/style.gp'
call figdir.'/term.gp'
set xrange [-0.9:vmax + 0.7]
set label 'runs' at -0.8, ymax left offset 0, -1 font ',8'
set label '= model' at -0.8, ymax left offset 0, -2 font ',8' tc rgb '#1f77b4'
set yrange [ymin:ymax]
set xtics 1, 1
set xlabel 'kernel version (1-6 readable, 7-12 tensor cores)'
set ylabel 'byte counters / model (elements)'
set title 'Every recorded kernel run: what its counters saw over what the model predicts'
set key bottom right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'
plot data using ($3 == 1 ? $1 : 1/0):2 with points pt 7 ps 0.5 lc rgb '#1f77b4' title 'recorded ok', \
     data using ($3 == 0 ? $1 : 1/0):2 with points pt 9 ps 1.6 lc rgb '#d62728' title 'recorded FAIL (a kernel bug the model caught)', \
     counts using 1:(ymax):(sprintf('%d', $2)) with labels offset 0, -1 font ',8' notitle, \
     counts using 1:(ymax):(sprintf('%d', $3)) with labels offset 0, -2 font ',8' tc rgb '#1f77b4' notitle
