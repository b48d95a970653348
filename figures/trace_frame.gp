# trace_frame.gp: one frame of the tile animation (loaded by trace_anim.gp and trace_strip.gp).
# Needs: data (a `flashlab trace` CSV holding standard, flash1 and flash2), frac in (0, 1]: how far
# through each run (runs of different lengths advance together), and the variables set by
# trace_setup.gp.  Draws one panel per schedule present in the trace, left to right, between the
# fractions y0 and y1 of the canvas height.
#
# In each panel the HBM tensors the run touches are drawn to scale (rows down, columns across; the
# statistics l, m, L, D are widened to 3 columns to be visible).  Every tile the run has moved so far is
# painted with a translucent fill, blue for a load and orange for a store, so a tile read many
# times is darker: the shade is the traffic.  The last event has a black frame.  The bar on the
# right is SRAM use over M.  Columns of the CSV: include/flashlab/trace.h.
do for [a = 1:3] { if (nsteps[a] > 0) {
    algo = word(algos, a)
    last = ceil(frac * nsteps[a])
    set origin rank(a) / (1.0 * nruns), y0
    set size 1.0 / nruns, y1 - y0
    set title sprintf("{/:Bold %s}  step %d/%d", algo, last, nsteps[a]) tc ls a
    set xrange [-1 : width[a] + 2 * gap + 3]
    set yrange [nrows + 0.12 * nrows : -0.1 * nrows]
    unset label
    do for [t = 1:NT] {
        tn = word(tensors, t)
        if (xoff(tn, a) >= 0) {
            set label t tn at xoff(tn, a) + 0.5 * sc(tn) * wid(tn) / sc(tn), -0.05 * nrows center font ",9"
        }
    }
    set label 40 "SRAM" at width[a] + gap + 1.5, -0.05 * nrows center font ",9"
    if (rank(a) == 0) {
        set label 41 "blue: loads, orange: stores (darker = moved more often); black frame: the last event" \
            at 0, nrows * 1.11 left font ",8" tc rgb '#555555'
    }
    plot data skip 1 using (strcol(1) eq algo && $2 <= last && $10 >= 0 ? xoff(strcol(4), a) + sc(strcol(4)) * ($7 + $9 / 2.0) : NaN):($6 + $8 / 2.0):(sc(strcol(4)) * $9 / 2.0):($8 / 2.0):(strcol(3) eq "load" ? 0x1f5fbf : 0xe6550d) \
             with boxxyerror fs transparent solid 0.12 noborder lc rgb variable notitle, \
         '' skip 1 using (strcol(1) eq algo && $2 == last && $10 >= 0 ? xoff(strcol(4), a) + sc(strcol(4)) * ($7 + $9 / 2.0) : NaN):($6 + $8 / 2.0):(sc(strcol(4)) * $9 / 2.0):($8 / 2.0) \
             with boxxyerror fs empty border lc rgb 'black' lc rgb 'black' lw 2.5 notitle, \
         '' skip 1 using (strcol(1) eq algo && $2 == last ? width[a] + gap + 1.5 : NaN):(nrows * (1 - 0.5 * $12 / $13)):(1.5):(0.5 * nrows * $12 / $13) \
             with boxxyerror fs solid 0.6 noborder lc rgb '#777777' notitle, \
         '' skip 1 using (strcol(1) eq algo && $2 == last ? 0 : NaN):(nrows * 1.07):(sprintf("reads %d  writes %d  SRAM %d/%d", $16, $17, $12, $13)) \
             with labels left font ",9" notitle
} }
