# lab6_ncu.gp: lab 6's three measurements of a kernel's reads against the model's.  Each recorded
# Nsight Compute run (figures/data/gpu_ncu*.csv) gives three points at the model's read bytes
# (recomputed with the C library): what the byte counters saw (the kernel's requests: on the
# diagonal), the SM<->L2 traffic in 32-byte sectors (near it), and the DRAM (HBM) reads, which
# sit far below it: K and V are re-read from the 60 MB L2, so HBM sees most bytes once.  Point
# shapes: standard, flash1, flash2; open shapes: backward kernels.  Data: labkit.lab6.ncu_figure.
#
# variables: figdir, data (rows: model counters l2 dram schedule pass), fmt, out
load figdir.'/style.gp'
call figdir.'/term.gp'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel "the model's read bytes"
set ylabel 'measured read bytes'
set title 'What the counters, L2 and DRAM saw, against the model (one H200 run per point)'
set key top left font ',9'
pt(s, p) = (s == 1 ? 7 : s == 2 ? 5 : 9) - (p == 2 ? 1 : 0)
plot x with lines dt 2 lc rgb '#888888' title 'measured = model', \
     data using 1:2:(pt($5, $6)) with points pt variable ps 1.1 lc rgb '#ff7f0e' notitle, \
     data using 1:3:(pt($5, $6)) with points pt variable ps 1.1 lc rgb '#8c564b' notitle, \
     data using 1:4:(pt($5, $6)) with points pt variable ps 1.1 lc rgb '#9467bd' notitle, \
     NaN with points pt 7 ps 1.1 lc rgb '#ff7f0e' title 'byte counters (the requests)', \
     NaN with points pt 7 ps 1.1 lc rgb '#8c564b' title 'L2 sectors (Nsight Compute)', \
     NaN with points pt 7 ps 1.1 lc rgb '#9467bd' title 'DRAM bytes (Nsight Compute)', \
     NaN with points pt 7 lc rgb '#444444' title 'standard', \
     NaN with points pt 5 lc rgb '#444444' title 'flash1', \
     NaN with points pt 9 lc rgb '#444444' title 'flash2 (open: backward)'
