# term.gp: pick the terminal from the variable fmt ('png', 'pdf' or 'svg') and write to out.
if (!exists("fmt")) fmt = 'png'
if (fmt eq 'pdf') { set terminal pdfcairo enhanced font 'Helvetica,10' size 5in,3.4in }
if (fmt eq 'svg') { set terminal svg enhanced font 'Helvetica,12' size 750,510 background rgb 'white' }
if (fmt eq 'png') { set terminal pngcairo enhanced font 'Helvetica,11' size 900,620 background rgb 'white' }
set output out
