//! The pure core: facts in, judgements out. Nothing here does I/O, reads a clock or prints.

pub mod confirm;
pub mod doctor;
pub mod duration;
pub mod fetched;
pub mod gate;
pub mod heartbeat;
pub mod heartbeats;
pub mod hint;
pub mod holder;
pub mod kueue;
pub mod kueue_lease;
pub mod lease;
pub mod link;
pub mod live_gate;
pub mod live_lease;
pub mod lookalike;
pub mod skew;
pub mod time;
pub mod verdict;
pub mod waiting;
pub mod workload;
pub mod workloads;
