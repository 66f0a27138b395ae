#ifndef P4RCP_V1MODEL_METADATA_P4
#define P4RCP_V1MODEL_METADATA_P4

struct metadata_t {
    bool udp_fits_rcp;
}

#endif
