"""Mininet topologies with bmv2 switches and the experiments that reproduce the papers' figures."""
