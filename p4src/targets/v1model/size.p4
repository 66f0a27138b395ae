#ifndef P4RCP_SIZE_P4
#define P4RCP_SIZE_P4

// One register cell per possible v1model port (egress_port is bit<9>), so
// any port number a topology uses indexes inside the arrays.
#define NUM_PORTS 512
#define ROUTING_V4_SIZE 1024

#endif
