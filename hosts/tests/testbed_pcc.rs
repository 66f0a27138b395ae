//! The PCC controllers on the test bed (`testbed/scenarios.rs`), against
//! the targets of issue 12 (hosts/README.md, "Tests").

mod testbed;

use p4rcp_host::cc::vivace::Variant;
use p4rcp_host::cc::CcSpec;
use testbed::scenarios::*;

#[test]
fn pcc_fills_a_lossless_link() {
    for cc in [ALLEGRO, ALLEGRO_REF, VIVACE, VIVACE_LOSS] {
        let u = alone(&cc, 0.0, 0.0, 1);
        assert!(u >= 0.9, "{}: {u:.3}", cc.name());
    }
}

/// Allegro paper Fig. 7 (> 95% at 1% loss, 74% at 2%); Vivace-Loss
/// likewise (Vivace paper Fig. 2): the loss here is both ways.
#[test]
fn allegro_and_vivace_loss_keep_their_rate_under_random_loss() {
    for cc in [ALLEGRO, VIVACE_LOSS] {
        let u1 = alone(&cc, 0.01, 0.0, 1);
        let u2 = alone(&cc, 0.02, 0.0, 1);
        assert!(u1 >= 0.9 && u2 >= 0.7, "{}: {u1:.3} at 1%, {u2:.3} at 2%", cc.name());
    }
}

#[test]
fn vivace_ignores_ack_jitter() {
    let u = alone(&VIVACE, 0.0, 0.004, 1);
    assert!(u >= 0.85, "{u:.3}");
}

#[test]
fn four_vivace_flows_converge() {
    for cc in [VIVACE, VIVACE_LOSS] {
        let (j, r) = four_flows(&cc, 0.0, 30.0, 1);
        let u = r.utilisation(20.0, 30.0, 12_000.0);
        assert!(j >= 0.9 && u >= 0.9, "{}: Jain {j:.3}, utilisation {u:.3}", cc.name());
    }
}

#[test]
fn vivace_is_rtt_fair() {
    let q = rtt_ratio(&VIVACE, 0.100, 1);
    assert!((0.5..=2.0).contains(&q), "10 ms / 100 ms goodput {q:.2}");
}

/// Issue 12's target (within 20% of the new share <= 5 s after the
/// halving), and why `vivace` has no emergency stop: with pcc.h's, the
/// flow whose MIs lost more is halved alone and the two draw together
/// slowly (vivace.rs, the module documentation).
#[test]
fn vivace_reaches_the_halved_share_within_5_s_without_the_emergency_stop() {
    let after_halving = |cc: &CcSpec, seed| bandwidth_change(cc, 0.0, seed)[0];
    for seed in 1..=4 {
        let t = after_halving(&VIVACE, seed);
        assert!(t.is_some_and(|t| t <= 5.0), "seed {seed}: {t:?}");
    }
    let stop = CcSpec::Vivace(Variant::Stop);
    let slow = (1..=4).filter(|&seed| after_halving(&stop, seed).is_none_or(|t| t > 5.0));
    assert!(slow.count() >= 1, "vivace-stop settled in every seed");
}

/// Allegro's fairness comes slowly at these rates (tens of packets per
/// MI near the 5% loss cliff: hosts/README.md, "PCC on the test bed");
/// the reference's flows share the link within a minute.
#[test]
fn four_allegro_ref_flows_converge_within_a_minute() {
    let (j, _) = four_flows(&ALLEGRO_REF, 0.0, 60.0, 1);
    assert!(j >= 0.9, "Jain {j:.3} over 50-60 s");
}
