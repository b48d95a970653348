# third_party.gp: attention kernels we did not write, measured with Nsight Compute on the H200
# (figures/data/third_party_explained.csv, made by scripts/explain_kernels.py match from
# figures/data/third_party_ncu.csv) against flashlab's model of the schedule each was identified
# with.  Left: SM<-L2 read bytes (l1tex__m_xbar2l1tex_read_sectors x 32) against the launch
# model's; middle: DRAM read bytes (dram__bytes_read.sum) against `flashlab l2 --launch` (two L2
# partitions, rule S1); right: sectors crossing between the L2's partitions
# (lts__t_sectors_srcunit_ltcfabric.sum x 32, run 2 only) against the model's fabric_B.  One point
# per attention kernel and shape, forward and backward; on the diagonal the model is exact, the
# band is +-10 %.  Points far above the diagonal are docs/third_party.md's exceptions (register
# spills: their local-memory traffic is measured, not modelled).
# Variables (gnuplot -e): data (the third-party kernels), ours (flashlab's, run 1), fmt, out.
# Regenerate (in figures/): gnuplot -e "data='data/third_party_explained.csv'; ours='data/third_party_explained_ours.csv'; fmt='png'; out='third_party.png'" third_party.gp
load 'style.gp'
load 'term.gp'
set datafile separator ','
set datafile columnheaders
set datafile missing ''
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,11' size 1900,640 background rgb 'white'; set output out }
set multiplot layout 1,3 title 'Third-party attention kernels on the H200: measured vs the model of their identified schedule'
set logscale xy 10
set format x '10^{%L}'
set format y '10^{%L}'
set size square
set key top left font ',9'
fam(lib) = strcol('lib') eq lib
set xlabel 'model (bytes)'
set ylabel 'measured SM<-L2 reads (bytes)'
set title 'SM<-L2 reads'
set xrange [1e7:1e12]
set yrange [1e7:1e12]
plot x w l ls 4 title 'exact', 1.1*x w l lc rgb '#bbbbbb' dt 3 title '+-10 %', 0.9*x w l lc rgb '#bbbbbb' dt 3 notitle, \
     data u (column('model_sm_read_B')):(fam('PyTorch FA2') ? column('meas_sm_read_B') : NaN) w p ls 1 title 'SDPA FA2', \
     data u (column('model_sm_read_B')):(fam('cuDNN') ? column('meas_sm_read_B') : NaN) w p ls 2 title 'SDPA cuDNN', \
     data u (column('model_sm_read_B')):(fam('xFormers/CUTLASS') ? column('meas_sm_read_B') : NaN) w p ls 6 title 'SDPA mem-efficient', \
     data u (column('model_sm_read_B')):(fam('Triton tutorial') ? column('meas_sm_read_B') : NaN) w p ls 3 title 'Triton tutorial', \
     ours u (column('model_sm_read_B')):(column('meas_sm_read_B')) w p ls 7 title 'ours (v10, v9; run 1)'
set xlabel 'model: flashlab l2 --launch (bytes)'
set ylabel 'measured DRAM reads (bytes)'
set title 'DRAM reads'
set xrange [2e7:4e9]
set yrange [2e7:4e9]
plot x w l ls 4 title 'exact', 1.1*x w l lc rgb '#bbbbbb' dt 3 title '+-10 %', 0.9*x w l lc rgb '#bbbbbb' dt 3 notitle, \
     data u (column('model_dram_read_B')):(fam('PyTorch FA2') ? column('meas_dram_read_B') : NaN) w p ls 1 title 'SDPA FA2', \
     data u (column('model_dram_read_B')):(fam('cuDNN') ? column('meas_dram_read_B') : NaN) w p ls 2 title 'SDPA cuDNN', \
     data u (column('model_dram_read_B')):(fam('xFormers/CUTLASS') ? column('meas_dram_read_B') : NaN) w p ls 6 title 'SDPA mem-efficient', \
     data u (column('model_dram_read_B')):(fam('Triton tutorial') ? column('meas_dram_read_B') : NaN) w p ls 3 title 'Triton tutorial', \
     ours u (column('model_dram_read_B')):(column('meas_dram_read_B')) w p ls 7 title 'ours (v10, v9; run 1)'
set xlabel 'model: fabric\_B of flashlab l2 --launch (bytes)'
set ylabel 'measured fabric sectors x 32 (bytes)'
set title 'Between the L2 partitions'
set xrange [1e7:2e11]
set yrange [1e7:2e11]
plot x w l ls 4 title 'exact', 1.1*x w l lc rgb '#bbbbbb' dt 3 title '+-10 %', 0.9*x w l lc rgb '#bbbbbb' dt 3 notitle, \
     data u (column('model_fabric_B')):(fam('PyTorch FA2') ? column('meas_fabric_B') : NaN) w p ls 1 title 'SDPA FA2', \
     data u (column('model_fabric_B')):(fam('cuDNN') ? column('meas_fabric_B') : NaN) w p ls 2 title 'SDPA cuDNN', \
     data u (column('model_fabric_B')):(fam('xFormers/CUTLASS') ? column('meas_fabric_B') : NaN) w p ls 6 title 'SDPA mem-efficient', \
     data u (column('model_fabric_B')):(fam('Triton tutorial') ? column('meas_fabric_B') : NaN) w p ls 3 title 'Triton tutorial'
unset multiplot
