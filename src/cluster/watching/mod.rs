//! Following the facts live: list-then-watch streams of plain signals that survive the
//! connection's faults ([`reflector`]), and the streams `gate --watch` merges ([`kueue`]).

pub mod kueue;
pub mod reflector;
