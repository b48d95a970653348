# trace_setup.gp: reads a `flashlab trace` CSV (variable data) and sets what trace_frame.gp needs:
# the three schedules, their numbers of events, the sequence length, the head dimension, and where
# each tensor sits in a panel.  Loaded by trace_anim.gp and trace_strip.gp after style.gp.
set datafile separator ','
algos = "standard flash1 flash2"
tensors = "Q K V O S P l m L"
array nsteps[3]
array width[3]
do for [a = 1:3] {
    algo = word(algos, a)
    stats data skip 1 using (strcol(1) eq algo ? $2 : NaN) nooutput
    nsteps[a] = int(STATS_max)
}
stats data skip 1 using (strcol(4) eq "Q" ? $6 + $8 : NaN):(strcol(4) eq "Q" ? $7 + $9 : NaN) nooutput
nrows = int(STATS_max_x)
dcols = int(STATS_max_y)
gap = nrows / 16.0 > 2 ? nrows / 16.0 : 2
stat(t) = (t eq "l" || t eq "m" || t eq "L")
sc(t) = stat(t) ? 3 : 1                      # statistics: one column, drawn three wide
wid(t) = (t eq "S" || t eq "P") ? nrows : stat(t) ? 3 : dcols
slot(t) = t eq "Q" ? 0 : t eq "K" ? 1 : t eq "V" ? 2 : t eq "O" ? 3 : 4
# x offset of tensor t in panel a (standard: S, P after O; flash1: l, m; flash2: L); -1 if absent
xoff(t, a) = slot(t) < 4 ? slot(t) * (dcols + gap) : \
    a == 1 ? (t eq "S" ? 4 * (dcols + gap) : t eq "P" ? 4 * (dcols + gap) + nrows + gap : -1) : \
    a == 2 ? (t eq "l" ? 4 * (dcols + gap) : t eq "m" ? 4 * (dcols + gap) + 3 + gap : -1) : \
             (t eq "L" ? 4 * (dcols + gap) : -1)
width[1] = 4 * (dcols + gap) + 2 * nrows + gap
width[2] = 4 * (dcols + gap) + 6 + gap
width[3] = 4 * (dcols + gap) + 3
unset xtics
unset ytics
unset border
unset grid
unset key
unset colorbox
