//! Following the facts live: list-then-watch streams of plain signals that survive the
//! connection's faults ([`reflector`]), the streams `gate --watch` merges ([`kueue`]), and
//! Kueue's manager's Lease as context facts for `lease --watch` ([`kueue_lease`]); each
//! watch request read with a bound on its lines ([`bounded_watch`]).

pub mod bounded_watch;
pub mod confirm;
pub mod event;
pub mod kueue;
pub mod kueue_lease;
pub mod reflector;
