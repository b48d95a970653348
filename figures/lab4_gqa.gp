# lab4_gqa.gp: lab 4's K/V traffic against the GQA group size G = Hq / Hkv (Hq query heads
# sharing Hkv K/V heads).  flash2 runs one query head at a time and reloads the shared K and V
# for each; flash2-gqa stacks the G query heads of a group, so each K/V tile is loaded once per
# group, but the stacked rows share the SRAM, so its block shrinks as G grows (labels).  The
# floor reads each K/V head's K and V once.  Data: labkit.lab4.gqa_figure (flashlab runs).
#
# variables: figdir, data (rows: G Hkv flash2 flash2-gqa block floor), N, d, M, Hq, fmt, out
load figdir.'/style.gp'
call figdir.'/term.gp'
set logscale x 2
set logscale y
set format y '10^{%L}'
set xlabel 'query heads per K/V head, G = H_q / H_{kv}'
set ylabel 'K + V elements read from HBM'
set title sprintf('H_q = %d query heads, N = %d, d = %d, M = %d', Hq, N, d, M)
set xrange [0.8:Hq * 1.25]
set key bottom left
plot data using 1:3 with linespoints ls 3 title 'flash2: K, V reloaded per query head', \
     data using 1:4 with linespoints lc rgb '#006400' lw 2 pt 5 ps 0.9 title 'flash2-gqa: once per group', \
     data using 1:4:(sprintf('B = %d', $5)) with labels offset 0, -1 font ',9' notitle, \
     data using 1:($3 / $1) with lines ls 4 title 'flash2 / G (if the block did not shrink)', \
     data using 1:6 with linespoints ls 5 pt 6 title 'floor: each K/V head read once (2 H_{kv} N d)'
