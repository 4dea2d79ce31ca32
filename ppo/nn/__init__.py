"""The networks, distributions, optimizers and normalisers of a group of runs held as one parameter block."""
