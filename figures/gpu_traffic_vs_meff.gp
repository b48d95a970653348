# gpu_traffic_vs_meff.gp: the headline figure.  HBM traffic of the three forward schedules at
# N = 4096, d = 64 (fp16) against the on-chip footprint M_eff of their tiles: the model's curve
# (fl_run, figures/data/gpu_model_curve.csv), the Theta(N^2 d^2 / M) line fitted to flash1's
# curve, the CUDA kernels' byte counters (figures/data/gpu_validate.csv) and Nsight Compute
# (figures/data/gpu_ncu.csv: sectors the SMs received from L2 plus sectors written to L2, x 32 B,
# converted to elements with the counters' elements-per-byte of the same run).  The curves use
# square tiles (flash1: the paper's Br = min(Bc, d)); the kernels' non-square tiles (flash2
# 128x64, standard 64x128) sit off them, on the model's count for their own tiles (crosses).
#
# usage (from the repository root):
#   gnuplot -e "fmt='png'; out='figures/gpu_traffic_vs_meff.png'" figures/gpu_traffic_vs_meff.gp
#   (fmt = 'png', 'pdf' or 'svg')
load 'figures/style.gp'
call 'figures/term.gp'

curve = 'figures/data/gpu_model_curve.csv'
val = 'figures/data/gpu_validate.csv'
N = 4096.0
d = 64.0
set datafile separator ','
set datafile commentschars '#'
set logscale xy
set format y '10^{%L}'
set xlabel 'on-chip footprint of the tiles M_{eff} (elements)'
set ylabel 'HBM reads + writes (elements)'
set title sprintf('Forward attention, N = %d, d = %d, fp16, one NVIDIA H200', N, d)
set key bottom left font ',9'
set xrange [400:70000]

# Theta(N^2 d^2 / M): c fitted (least squares in log space) to flash1's model curve
f(x) = log(c) + log(N**2 * d**2 / x)
c = 10.0
set fit quiet nolog
fit f(x) curve using (strcol(1) eq 'flash1' ? $6 : 1/0):(log($9)) via c

# ncu points: join the ncu rows with the counters' elements and bytes of the same configuration
ncu = "< awk -F, 'FNR==1{f++} /^#/||/^tag/||/^algo/{next} f==1 && $1==\"matrix\" && $3==\"fwd\" && $10==0 {k=$2\",\"$5\",\"$6\",\"$7\",\"$8\",\"$9; e[k]=$14+$15; b[k]=$18} f==2 && $2==\"fwd\" && $4==4096 && $5==64 && $3==\"fp16\" {k=$1\",\"$3\",\"$4\",\"$5\",\"$6\",\"$7; if (k in b) print $1\",\"$8\",\"($18+$15)*e[k]/b[k]}' figures/data/gpu_validate.csv figures/data/gpu_ncu.csv"

is(a, n, dd, dt) = strcol(1) eq 'matrix' && strcol(2) eq a && strcol(3) eq 'fwd' && strcol(5) eq dt && $6 == n && $7 == dd && $10 == 0

plot curve using (strcol(1) eq 'standard' ? $6 : 1/0):9 with lines ls 1 title 'standard: model', \
     curve using (strcol(1) eq 'flash1' ? $6 : 1/0):9 with lines ls 2 title 'flash1: model', \
     curve using (strcol(1) eq 'flash2' ? $6 : 1/0):9 with lines ls 3 title 'flash2: model', \
     c * N**2 * d**2 / x with lines ls 4 title sprintf('%.1f N^2d^2/M (fit to flash1)', c), \
     val using (is('standard', N, d, 'fp16') || is('flash1', N, d, 'fp16') || is('flash2', N, d, 'fp16') ? $11 : 1/0):($12 + $13) \
         with points lc rgb '#000000' pt 2 ps 2.2 lw 1.2 title "model at the kernels' own tiles", \
     val using (is('standard', N, d, 'fp16') ? $11 : 1/0):($14 + $15) with points ls 6 pt 7 ps 1.3 title 'byte counters (CUDA kernels)', \
     val using (is('flash1', N, d, 'fp16') ? $11 : 1/0):($14 + $15) with points ls 6 pt 7 ps 1.3 notitle, \
     val using (is('flash2', N, d, 'fp16') ? $11 : 1/0):($14 + $15) with points ls 6 pt 7 ps 1.3 notitle, \
     ncu using 2:3 with points ls 7 pt 6 ps 2.0 lw 1.5 title 'Nsight Compute (SM{/Symbol \254}L2 reads + L2 writes)'
