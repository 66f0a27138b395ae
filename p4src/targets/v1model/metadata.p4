#ifndef P4RCP_V1MODEL_METADATA_P4
#define P4RCP_V1MODEL_METADATA_P4

#include "size.p4"

struct metadata_t {
    bool udp_fits_rcp;
    // Read in ingress by weight_classifier (weights.p4) for forward RCP packets, from the cell of their
    // (output port, weight class): the rate to stamp (0: RCP off) and the policing parameters (0: off).
    rate_kbps_t rate;
    bit<32> police_bytes;
    bit<32> police_limit;
    // The policer's working values (policing.p4).
    police_index_t police_i0;
    police_index_t police_i1;
    bit<64> police_c0;
    bit<64> police_c1;
}

#endif
