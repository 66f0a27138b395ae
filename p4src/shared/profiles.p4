// RCP's compile-time profiles on Tofino and SUME, in the way fabric-tna builds its profiles: the program (or
// the compiler's command line) defines one RCP_PROFILE_<NAME>, and each profile turns on the features it
// holds. Makefile's RCP_PROFILES lists the same names (a test keeps the two in step).
//
//   core         the per-packet RCP work alone: one stamp per port, the three additions, two comparisons
//   weights      core + weighted sharing: the DSCP's weight class picks the stamp (docs/design.md, "Weights")
//   policing     core + policing of the senders above their stamp (docs/design.md, "Policing")
//   feedforward  core + the feedforward's SYN stamps and committed sizes (docs/design.md, "Sudden load"):
//                what the default RCP (the preset `rcp`) needs
//   full         every feature
#ifndef P4RCP_PROFILES_P4
#define P4RCP_PROFILES_P4

#if defined(RCP_PROFILE_FULL)
#define RCP_WEIGHTS
#define RCP_POLICING
#define RCP_FEEDFORWARD
#elif defined(RCP_PROFILE_WEIGHTS)
#define RCP_WEIGHTS
#elif defined(RCP_PROFILE_POLICING)
#define RCP_POLICING
#elif defined(RCP_PROFILE_FEEDFORWARD)
#define RCP_FEEDFORWARD
#elif !defined(RCP_PROFILE_CORE)
#error "no RCP profile: define one of RCP_PROFILE_CORE, RCP_PROFILE_WEIGHTS, RCP_PROFILE_POLICING, RCP_PROFILE_FEEDFORWARD, RCP_PROFILE_FULL"
#endif

#endif
