# trace_strip.gp: a strip of frames for slides: standard, flash1, flash2 in columns; rows at a
# third, two thirds and the end of each run.
#   flashlab trace --out trace.csv
#   gnuplot -e "data='trace.csv'; fmt='png'; out='trace_strip.png'" figures/trace_strip.gp
# fmt: png (default), pdf or svg (term.gp).  What a panel shows: trace_frame.gp.
if (!exists("data")) data = 'trace.csv'
if (!exists("out")) out = 'trace_strip.png'
if (!exists("fmt")) fmt = 'png'
dir = system("dirname " . ARG0)
load dir . '/style.gp'
load dir . '/term.gp'
# a strip is larger than a plot: keep term.gp's terminal and style, change the size only
if (fmt eq 'png') { set terminal pngcairo size 1500, 1500 }
if (fmt eq 'pdf') { set terminal pdfcairo size 10in, 10in }
if (fmt eq 'svg') { set terminal svg size 1500, 1500 }
load dir . '/trace_setup.gp'
set multiplot
rows = 3
do for [k = 1:rows] {
    frac = k / (rows * 1.0)
    y1 = 1.0 - (k - 1) / (rows * 1.0)
    y0 = y1 - 1.0 / rows
    load dir . '/trace_frame.gp'
}
unset multiplot
unset output
