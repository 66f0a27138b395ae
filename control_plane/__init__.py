"""RCP control plane: every T = min(10 ms, d0), counters in, R(t) out."""
