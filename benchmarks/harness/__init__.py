"""The benchmark harness: what every family shares (timer, CSV schema, machine description, the
C++ benchmark program, the kernel case). run.py, compare.py and plot.py are its entry points."""
