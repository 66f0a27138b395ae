#ifndef P4RCP_SIZE_P4
#define P4RCP_SIZE_P4

// One register cell per possible v1model port (egress_port is bit<9>), so
// any port number a topology uses indexes inside the arrays.
#define NUM_PORTS 512
// egress_spec after mark_to_drop (p4rcp/dataplane.py: DROP_PORT)
#define DROP_PORT 511
#define ROUTING_V4_SIZE 1024
// One cell per (port, weight class): (port << WEIGHT_CLASS_BITS) | class.
#define RATE_CELLS 4096
typedef bit<12> rate_cell_t;
// One entry per (RCP port, DSCP value): 64 ports with RCP.
#define WEIGHT_CLASSIFIER_SIZE 4096
// The cell of packets weight_classifier did not classify: the drop port's, whose stamp is RCP_RATE_NONE (no
// stamp: the reset value, which the control plane writes again) and whose policing it never writes (off).
#define UNCLASSIFIED_CELL 4088
// One SYN stamp per (port, k): (port << SYN_RATE_BITS) | (k - 1).
#define SYN_RATE_CELLS 4096
typedef bit<12> syn_cell_t;
// A policing epoch is 2^14 us of ingress_global_timestamp (16.384 ms; p4rcp/dataplane.py).
#define POLICE_EPOCH_SHIFT 14

#endif
