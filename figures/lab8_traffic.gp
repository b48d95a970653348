# lab8_traffic.gp: lab 8's traffic of the student's schedule, split by tensor (reads dark, writes
# light), beside what `flashlab optimize` reports for the same case: its best schedule, flash2 and
# flash1 with their own block rules, and the lower bound.  The gap between the first two bars is
# the student's score; the tensor split says where the re-reads go.  Data: labkit.grading.figure.
#
# variables: figdir, data (rows: "name" Q_r Q_w K_r K_w V_r V_w O_r O_w L_r L_w other), title,
#   fmt, out
load figdir.'/style.gp'
call figdir.'/term.gp'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border lc rgb '#333333'
set boxwidth 0.6
set ylabel 'HBM reads + writes (elements)'
set title title noenhanced
set yrange [0:*]
set xtics nomirror rotate by -20 font ',9'
set grid ytics
set key outside right top vertical font ',9'
plot data using 2:xtic(1) lc rgb '#08519c' title 'Q read', \
     '' using 3 lc rgb '#6baed6' title 'Q written', \
     '' using 4 lc rgb '#a63603' title 'K read', \
     '' using 5 lc rgb '#fd8d3c' title 'K written', \
     '' using 6 lc rgb '#54278f' title 'V read', \
     '' using 7 lc rgb '#9e9ac8' title 'V written', \
     '' using 8 lc rgb '#006d2c' title 'O read', \
     '' using 9 lc rgb '#74c476' title 'O written', \
     '' using 10 lc rgb '#525252' title 'L read', \
     '' using 11 lc rgb '#bdbdbd' title 'L written', \
     '' using 12 lc rgb '#e6ab02' title 'total'
