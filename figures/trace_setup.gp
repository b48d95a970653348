# trace_setup.gp: reads a `flashlab trace` CSV (variable data) and sets what trace_frame.gp needs:
# which of standard, flash1, flash2 the trace holds and their numbers of events, the sequence
# length, the head dimension, and where each tensor sits in a panel.  Works for a trace of one,
# two or three of them, forward or backward (--pass bwd: dO, dQ, dK, dV, D, dP, dS).  Loaded by
# trace_anim.gp and trace_strip.gp after style.gp.
set datafile separator ','
algos = "standard flash1 flash2"
# every tensor a trace may hold, in drawing order: d-wide matrices, N-wide matrices, statistics
tensors = "Q K V O dO dQ dK dV S P dP dS l m L D"
NT = words(tensors)
kind(t) = (t eq "S" || t eq "P" || t eq "dP" || t eq "dS") ? 2 : \
          (t eq "l" || t eq "m" || t eq "L" || t eq "D") ? 3 : 1
array nsteps[3]
array width[3]
array off[3 * NT]
do for [a = 1:3] {
    algo = word(algos, a)
    # a sentinel 0 for rows of other runs: stats always has points, and max = 0 means "absent"
    stats data skip 1 using (strcol(1) eq algo ? $2 : 0) nooutput
    nsteps[a] = int(STATS_max)
}
nruns = (nsteps[1] > 0) + (nsteps[2] > 0) + (nsteps[3] > 0)
stats data skip 1 using (strcol(4) eq "Q" ? $6 + $8 : 0):(strcol(4) eq "Q" ? $7 + $9 : 0) nooutput
nrows = int(STATS_max_x)
dcols = int(STATS_max_y)
stats data skip 1 using (strcol(4) eq "K" ? $6 + $8 : strcol(4) eq "S" ? $7 + $9 : 0) nooutput
nkeys = STATS_max > 0 ? int(STATS_max) : nrows
gap = nrows / 16.0 > 2 ? nrows / 16.0 : 2
wid(t) = kind(t) == 2 ? nkeys : kind(t) == 3 ? 3 : dcols
sc(t) = kind(t) == 3 ? 3 : 1                 # statistics: one column, drawn three wide
do for [a = 1:3] {
    algo = word(algos, a)
    x = 0
    do for [k = 1:NT] {
        tn = word(tensors, k)
        stats data skip 1 using ((strcol(1) eq algo && strcol(4) eq tn) ? 1 : 0) nooutput
        if (STATS_max > 0) {
            off[(a - 1) * NT + k] = x
            x = x + wid(tn) + gap
        } else {
            off[(a - 1) * NT + k] = -1
        }
    }
    width[a] = x
}
tidx(t) = (t eq "-") ? 0 : sum [k = 1:NT] (word(tensors, k) eq t ? k : 0)
xoff(t, a) = tidx(t) > 0 ? off[(a - 1) * NT + tidx(t)] : -1
# the column of run a among the runs present (0-based)
rank(a) = (a > 1 && nsteps[1] > 0) + (a > 2 && nsteps[2] > 0)
unset xtics
unset ytics
unset border
unset grid
unset key
unset colorbox
