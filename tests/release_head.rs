//! HEAD's release build, the one `tests/e2e_krew.rs` installs through Krew and
//! `tests/release_reproducible.rs` compares with a second: `scripts/release` in a checkout of
//! HEAD of its own builds and packs it, compiling the plugin's own crates (not reusing another
//! checkout's: `release::build` checks that before the build is kept), and the sizes docs/install.md states for the release binary and the Krew
//! archive hold for it. Made once per commit and toolchain (`release::head_build`).
//!
//! `scripts/test` runs this target on its own, in the background, as soon as the test build is
//! done: the release build (fat LTO, one codegen unit: minutes on one core) then fills the
//! cores the end-to-end tests leave idle while they wait on their clusters, and the two tests
//! that need it find it made, or wait for it on its lock, instead of building it in their lane.

#[path = "support/release.rs"]
mod release;

#[test]
fn heads_release_build_is_made_in_a_checkout_of_its_own_and_its_stated_sizes_hold() {
    let head = release::head_build();
    eprintln!("the release build of HEAD: {}", if head.fresh { "built now" } else { "kept from an earlier test" });
    assert!(!head.checkout.exists(), "the checkout it was built in is removed: {}", head.checkout.display());
    release::readme_sizes_hold(&head.built);
}
