//! Following the facts live: list-then-watch streams of plain signals that survive the
//! connection's faults ([`reflector`]), and Kueue's manager's Lease as context facts
//! ([`kueue_lease`]).

pub mod kueue_lease;
pub mod reflector;
