"""The Mininet engine: an experiment's runs with bmv2 switches and the Rust hosts, in real time.

runner.py runs them (run_experiment, as every engine); network.py builds and tears down the network of one
run (bmv2_switch.py: its switches); external.py measures external schemes from captures.
"""
