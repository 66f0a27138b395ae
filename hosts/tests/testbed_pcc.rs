//! The PCC controllers on the test bed (`testbed/scenarios.rs`), against
//! the PCC papers' targets (hosts/README.md, "Tests").

mod testbed;

use p4rcp_host::cc::VivaceVariant as Variant;
use p4rcp_host::cc::CcSpec;
use testbed::scenarios::*;

#[test]
fn pcc_fills_a_lossless_link() {
    for cc in [ALLEGRO, ALLEGRO_REF, VIVACE, VIVACE_LOSS, VIVACE_LOSS_P4RCP] {
        let u = alone(&cc, 0.0, 0.0, 1);
        assert!(u >= 0.9, "{}: {u:.3}", cc.name());
    }
}

/// Allegro paper Fig. 7 (> 95% at 1% loss, 74% at 2%); Vivace-Loss
/// likewise (Vivace paper Fig. 2): the loss here is both ways.
#[test]
fn allegro_and_vivace_loss_keep_their_rate_under_random_loss() {
    for cc in [ALLEGRO, VIVACE_LOSS, VIVACE_LOSS_P4RCP] {
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

/// `vivace-loss` follows the NSDI'18 code (one probe pair while moving
/// on, +-0.5 Mb/s probes, pcc.h's utility and stop): its four flows reach
/// Jain 0.72-0.89 over 20-30 s (seeds 1-5), so the target is p4rcp's
/// variant's.
#[test]
fn four_vivace_flows_converge() {
    for cc in [VIVACE, VIVACE_LOSS_P4RCP] {
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

/// The target (within 20% of the new share <= 5 s after the
/// halving), and why `vivace` has no emergency stop: with pcc.h's, the
/// flow whose MIs lost more is halved alone and the two draw together
/// slowly (cc/vivace/mod.rs, the module documentation).
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
/// MI near the 5% loss cliff: hosts/README.md, "Tests");
/// the reference's flows share the link within a minute.
#[test]
fn four_allegro_ref_flows_converge_within_a_minute() {
    let (j, _) = four_flows(&ALLEGRO_REF, 0.0, 60.0, 1);
    assert!(j >= 0.9, "Jain {j:.3} over 50-60 s");
}

/// The mean share of the 13.91 Mb/s that `cc` keeps in Mininet's lossy
/// experiment at 5% loss (`lossy`), over seeds 1-20, and each seed's.
fn lossy_5_percent(cc: &CcSpec) -> (f64, Vec<f64>) {
    let u: Vec<f64> = (1..=20).map(|seed| lossy(cc, 0.05, seed)).collect();
    (u.iter().sum::<f64>() / u.len() as f64, u)
}

/// At 5% random loss the NSDI'18 code (`gradient_descent_pcc_client
/// ... 0`) kept 64% of the link in Mininet; `vivace-loss`, which follows
/// it, stays within 10 points of that on the test bed (0.64 over these
/// seeds, 0.61 over 60). p4rcp's variant keeps more (0.72; 0.73 over 60):
/// it always runs two probe pairs that must agree where pcc.h runs one
/// after every move that kept its direction, and it second-guesses fewer
/// moves up (hosts/README.md, "PCC's rules and where they come from").
#[test]
fn vivace_loss_keeps_the_reference_share_at_5_percent_loss() {
    let (faithful, u) = lossy_5_percent(&VIVACE_LOSS);
    assert!((0.54..=0.74).contains(&faithful), "vivace-loss {faithful:.3}: {u:.2?}");
    let (variant, v) = lossy_5_percent(&VIVACE_LOSS_P4RCP);
    assert!(
        (0.65..=0.85).contains(&variant) && variant > faithful + 0.05,
        "vivace-loss-p4rcp {variant:.3} against vivace-loss {faithful:.3}: {v:.2?}"
    );
}

/// At 5% random loss Allegro (both utilities) keeps whatever rate its
/// starting state ended at (2, 4, 8 or 16 Mb/s, decided by a few lost
/// packets in its first MIs), then hardly moves: the runs split into a
/// low group (the reference's 26% in Mininet) and a high one, and two
/// seeds say little about the mean (hosts/README.md, "Allegro at 5%
/// loss").
#[test]
fn allegro_at_5_percent_loss_keeps_the_rate_its_start_found() {
    for cc in [ALLEGRO, ALLEGRO_REF] {
        let (mean, u) = lossy_5_percent(&cc);
        let low = u.iter().filter(|&&x| x < 0.4).count();
        let high = u.iter().filter(|&&x| x > 0.75).count();
        assert!(
            low >= 5 && high >= 4 && (0.4..=0.7).contains(&mean),
            "{}: mean {mean:.3}, {low} below 0.4, {high} above 0.75: {u:.2?}",
            cc.name()
        );
    }
}
