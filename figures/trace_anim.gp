# trace_anim.gp: the tiles of standard, flash1 and flash2 moving, side by side, as a GIF.
#   flashlab trace --out trace.csv          (default: N = 64, d = 8, M = 384: 8 x 8 tiles for flash)
#   gnuplot -e "data='trace.csv'; out='trace.gif'" figures/trace_anim.gp
# Optional: frames=60 (frames of the animation), delay=12 (1/100 s per frame).
# The three runs advance together: frame f shows the first f/frames of each run's events.
# What a panel shows: trace_frame.gp.  The figure style: style.gp.
if (!exists("data")) data = 'trace.csv'
if (!exists("out")) out = 'trace.gif'
if (!exists("frames")) frames = 60
if (!exists("delay")) delay = 12
dir = system("dirname " . ARG0)
load dir . '/style.gp'
load dir . '/trace_setup.gp'
set terminal gif animate delay delay size 1500, 560 background rgb 'white'
set output out
do for [f = 1:frames] {
    frac = f / (frames * 1.0)
    set multiplot
    y0 = 0.0
    y1 = 1.0
    load dir . '/trace_frame.gp'
    unset multiplot
}
unset output
