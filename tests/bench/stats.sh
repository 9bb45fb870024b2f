# Order statistics of the numbers on standard input, one per line, for the bench scripts
# (sourced, not run).

# median: the median.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# quartiles: the first and third quartiles (nearest rank), "Q1 Q3".
quartiles() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)] }'; }
