# lab7_floors.gp: lab 7's runtime against bytes on the H200 (GPT-2 medium: batch 64, 16 heads,
# N = 1024, d = 64, fp16; figures/data/gpu_fig2.csv).  Each point is one recorded kernel and tile
# size: its median runtime against its model bytes (the student's model_bytes, equal to the
# kernels' byte counters).  A kernel can be no faster than its bytes over the copy bandwidth (the
# diagonal) nor than its FLOPs over the matrix-product rate (the horizontal floors, one per pass).
# The materializing kernels sit near the byte floor, the tiled forwards far above it and within
# a factor of 2.3-3.7 of the arithmetic floor.  Data: labkit.lab7.figure.
#
# variables: figdir, data (rows: version pass(1 fwd, 2 bwd) bytes ms gflop Br Bc), peak_bytes,
#   peak_flops, gflop_fwd, gflop_bwd, fmt, out
load figdir.'/style.gp'
call figdir.'/term.gp'
set logscale xy
set xlabel 'model HBM bytes (GB)'
set ylabel 'median runtime (ms)'
set title 'Runtime against bytes: the byte floor and the arithmetic floor (H200, recorded)'
set xrange [0.2:60]
set yrange [0.1:20]
set samples 400
set key top left font ',9'
tb(x) = x * 1e9 / peak_bytes * 1e3
tf(g) = g * 1e9 / peak_flops * 1e3
v(n) = $1 == n
plot tb(x) with lines lc rgb '#444444' lw 1.5 title 'byte floor: bytes / copy bandwidth', \
     (gflop_fwd > 0 ? tf(gflop_fwd) : 1/0) with lines ls 5 lw 2 title sprintf('FLOP floor, forward (%.0f GFLOP)', gflop_fwd), \
     (gflop_bwd > 0 ? tf(gflop_bwd) : 1/0) with lines lc rgb '#9467bd' lw 2 dt 4 title sprintf('FLOP floor, backward (%.0f GFLOP)', gflop_bwd), \
     data using (v(8) ? $3 / 1e9 : 1/0):4 with points ls 1 pt 7 ps 1.4 title 'standard fwd (v8)', \
     data using (v(11) ? $3 / 1e9 : 1/0):4 with points ls 1 pt 13 ps 1.4 title 'standard bwd (v11)', \
     data using (v(7) ? $3 / 1e9 : 1/0):4 with points ls 3 pt 9 ps 1.4 title 'tiled fwd (v7)', \
     data using (v(10) ? $3 / 1e9 : 1/0):4 with points lc rgb '#006400' pt 5 ps 1.3 title 'tiled fwd (v10)', \
     data using (v(9) ? $3 / 1e9 : 1/0):4 with points ls 2 pt 11 ps 1.4 title 'tiled bwd (v9)', \
     data using ($3 / 1e9):4:(sprintf('%dx%d', $6, $7)) with labels offset 0.5, 0.6 left font ',7' notitle
