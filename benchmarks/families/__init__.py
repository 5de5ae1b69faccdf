"""Benchmark families, one module each. A family module has a docstring (its one-line summary is
shown by run.py --list) and a function cases(device) returning the cases to run on "cpu" or
"cuda"; each case has .op, .params, .quick and .measure(ctx) -> [harness.case.Measurement].
run.py finds every module in this package: adding a family is adding a file."""
