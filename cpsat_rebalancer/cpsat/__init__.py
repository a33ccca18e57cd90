"""CP-SAT side: the model builder, piecewise-linear pieces and the lexicographic driver."""
