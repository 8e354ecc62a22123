//! kubectl-dispatch: what dispatch's adapter would conclude about the readmission gate, why,
//! and what waits because of it.
//!
//! Functional core, imperative shell: [`cluster`] fetches facts, [`core`] judges them as a pure
//! function of (facts, now), [`render`] writes the result to any `io::Write`, and [`commands`]
//! wires the three together for each verb.

pub mod app;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod commands;
pub mod core;
pub mod error;
pub mod exit;
pub mod invocation;
pub mod log;
pub mod render;
pub mod report;
pub mod text;
