# style.gp: the one figure style of flashlab (loaded by every figure script).
# Colours per schedule are fixed so a schedule looks the same in every figure.
set encoding utf8
set border lw 1.2
set grid lw 0.5 lc rgb '#dddddd'
set key box opaque samplen 2 spacing 1.1
set tics nomirror
set style line 1 lc rgb '#d62728' lw 2 pt 7 ps 0.8   # standard
set style line 2 lc rgb '#1f77b4' lw 2 pt 5 ps 0.8   # flash1
set style line 3 lc rgb '#2ca02c' lw 2 pt 9 ps 0.9   # flash2
set style line 4 lc rgb '#444444' lw 1.5 dt 2        # fitted c*N^2*d^2/M
set style line 5 lc rgb '#9467bd' lw 1.5 dt 3        # lower bound
set style line 6 lc rgb '#ff7f0e' lw 2 pt 11 ps 1.0  # measured: byte counters
set style line 7 lc rgb '#8c564b' lw 2 pt 13 ps 1.0  # measured: Nsight Compute
# Output: call with -e "fmt='png'|'pdf'|'svg'; out='path'" and `call 'term.gp'` (see term.gp)
