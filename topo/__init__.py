"""The experiments that reproduce the papers' figures, and the engines that run them.

experiment.py reads an experiment file into validated data, schedule.py lists what a run starts, hosts.py
writes the host binaries' command lines, host_check.py has the host binary judge them, report/ writes the
summary and figures; the engines (mininet/, ns3/) run the experiments, and run.py picks one.
"""
