# fig_i_context_parallel.gp: (i) context parallelism of one causal attention layer (forward,
# d = 128, 64 heads, 8 K/V heads, 2-byte elements) on H100s linked by NVLink 4: the busiest
# device's compute time (its FLOPs / 989.4 TFLOP/s) and link time (the bytes it sends / 450 GB/s)
# for ring, striped and Ulysses, against the devices P at N = 131072 (left) and against N at
# P = 8 (right).  Every count comes from `flashlab cp` (docs/context_parallel.md, eq. CP-T).
# CSV columns (data): panel,cp,P,N,link_bytes,flops,compute_s,link_s,pass_s,exposed_s.
# Variables (gnuplot -e): data, fmt, out.  Regenerate: `flashlab plot --out DIR`.
load 'style.gp'
if (!exists("fmt")) fmt = 'png'
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,10' size 10in,3.8in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,12' size 1500,570 background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,11' size 1600,640 background rgb 'white' }
set output out
set datafile separator ','
set style line 11 lc rgb '#1f77b4' lw 2 pt 5 ps 0.9   # ring
set style line 12 lc rgb '#2ca02c' lw 2 pt 9 ps 0.9   # striped
set style line 13 lc rgb '#d62728' lw 1.5 pt 6 ps 1.6 # ulysses (open circles: its compute is striped's)
set logscale x 2
set logscale y 10
set format y '10^{%L}'
set ylabel 'time per pass of the busiest device (s)'
set key top right font ',9' spacing 1.0 maxrows 6 width -1 samplen 4
set multiplot layout 1,2 title "(i) context parallelism, causal forward, 64 heads, 8 K/V, d = 128, H100 NVLink 4: compute (solid) and link (dashed) time\nstriped and Ulysses compute alike (both balanced); ring and striped send alike (K, V of 8 heads); Ulysses also moves Q and O of 64 heads"
sel(p, a, col) = (strcol(1) eq p && strcol(2) eq a) ? column(col) : NaN
set title 'against the devices P, N = 131072'
set xlabel 'devices P'
set xrange [0.8:80]
set format x '%g'
plot data u 3:(sel('P', 'ring', 7)) w lp ls 11 t 'ring: compute', \
     data u 3:(sel('P', 'ring', 8)) w lp ls 11 dt 2 t 'ring: link', \
     data u 3:(sel('P', 'striped', 7)) w lp ls 12 t 'striped: compute', \
     data u 3:(sel('P', 'striped', 8)) w lp ls 12 dt 2 t 'striped: link', \
     data u 3:(sel('P', 'ulysses', 7)) w lp ls 13 t 'Ulysses: compute', \
     data u 3:(sel('P', 'ulysses', 8)) w lp ls 13 dt 2 t 'Ulysses: link'
set title 'against the sequence length N, P = 8'
set xlabel 'sequence length N (tokens)'
set xrange [6000:1400000]
set format x '2^{%L}'
set key top left
plot data u 4:(sel('N', 'ring', 7)) w lp ls 11 t 'ring: compute', \
     data u 4:(sel('N', 'ring', 8)) w lp ls 11 dt 2 t 'ring: link', \
     data u 4:(sel('N', 'striped', 7)) w lp ls 12 t 'striped: compute', \
     data u 4:(sel('N', 'striped', 8)) w lp ls 12 dt 2 t 'striped: link', \
     data u 4:(sel('N', 'ulysses', 7)) w lp ls 13 t 'Ulysses: compute', \
     data u 4:(sel('N', 'ulysses', 8)) w lp ls 13 dt 2 t 'Ulysses: link'
unset multiplot
