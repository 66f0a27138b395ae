// Weighted sharing (docs/design.md, "Weights"): the operator's table maps a packet's DSCP to a weight
// class, and each (port, class) has its own stamp in rcp_rate, written by the control plane as
// min(gamma C, w_k R): the data plane compares and stamps as for one class, with no multiplication.
//
// Runs in ingress, for forward RCP packets only, because policing (before the queue) needs the class too;
// the (port, class) cell reaches egress in the metadata. Its action also reads the (port, class) policing parameters,
// so that policing costs no table of its own when it is off.
#ifndef P4RCP_V1MODEL_WEIGHTS_P4
#define P4RCP_V1MODEL_WEIGHTS_P4

#include "policing.p4"      // rcp_police

control WeightClassifier(inout headers_t hdr, inout metadata_t meta, in standard_metadata_t std_meta) {
    // The rcp_rate register is read here rather than in egress: the cell is an action parameter, so bmv2
    // computes no index; the stamp itself is still written on departure (rcp.p4).
    @name(".set_cell_weight_classifier")
    action set_cell_weight_classifier(rate_cell_t cell) {
        rcp_rate.read(meta.rate, cell);
        rcp_police.read(meta.police, cell);
    }

    // The control plane installs, for every RCP port and every DSCP value, the cell of (port, class):
    // (port << WEIGHT_CLASS_BITS) | class, class 0 (weight 1) for a DSCP the operator did not map. A miss
    // (a port without RCP) reads the drop port's cells: no stamp (RCP_RATE_NONE), no policing.
    @name(".weight_classifier")
    table weight_classifier {
        key = {
            std_meta.egress_spec: exact @name("port");
            hdr.ipv4.dscp: exact @name("dscp");
        }
        actions = { set_cell_weight_classifier; }
        const default_action = set_cell_weight_classifier(UNCLASSIFIED_CELL);
        size = WEIGHT_CLASSIFIER_SIZE;
    }

    apply {
        weight_classifier.apply();
    }
}

#endif
