"""Python pieces shared by the control plane, the PTF tests and the experiments."""
