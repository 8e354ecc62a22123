//! Text bound for a terminal, at the bottom of the house: what renderers, the log, the exec
//! plugin's passed-on stderr and the error printer all write through.

pub mod sanitize;
pub mod terminal;
pub mod width;
