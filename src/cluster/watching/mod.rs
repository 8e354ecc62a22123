//! Following the facts live: list-then-watch streams of plain signals that survive the
//! connection's faults ([`reflector`]).

pub mod reflector;
