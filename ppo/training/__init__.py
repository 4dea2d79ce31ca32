"""A group of runs trained as a function of (configs, seeds): the driver, its records and their layout."""
