"""The evaluation suite (`make evaluate`, docs/evaluate.md): RCP and TCP over the RCP talk's list of conditions,
one table with a row per condition and PASS or FAIL against the targets.

targets: the targets, as data, and the pure judgement of a figure against one; conditions: the rows, each an
experiment file (and sweep point) with its targets; figures: a row's figures from its runs' records; table: the
table as Markdown, CSV and JSON; cluster: the runs as tasks of Dask's distributed scheduler; suite: the whole,
run on an engine; `python -m topo.evaluate` its command line.
"""
