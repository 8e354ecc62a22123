//! The wire decoders: a JSON body (as a list's item or a watch event's object carries it)
//! decoded as a Lease, Workload, ClusterQueue, AdmissionCheck and LocalQueue, each converted
//! to the core's facts, and the Lease judged at the ends of time and now. A value or an error,
//! never a panic: times at the edges of the range included.

#![no_main]

use k8s_openapi::jiff::Timestamp;
use kubectl_dispatch::cluster::reading::wire;
use kubectl_dispatch::core::fetched::Fetched;
use kubectl_dispatch::core::lease::{self, LeaseFacts, LeaseRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(l) = serde_json::from_slice::<wire::WireLease>(data) {
        let facts = LeaseFacts::from(&l);
        let lease_ref = LeaseRef::default();
        for now in [Timestamp::MIN, Timestamp::now(), Timestamp::MAX] {
            let assessed = lease::assess(&lease_ref, &Fetched::Found(facts.clone()), now);
            let _ = assessed.state.reason(&lease_ref);
            let _ = assessed.state.verdict();
            let _ = lease::future_skew(&facts, now);
        }
    }
    if let Ok(w) = serde_json::from_slice::<wire::WireWorkload>(data) {
        let _ = wire::workload(&w);
        let _ = wire::workload_facts(&w);
    }
    if let Ok(q) = serde_json::from_slice::<wire::WireClusterQueue>(data) {
        let _ = wire::cluster_queue(&q);
    }
    if let Ok(a) = serde_json::from_slice::<wire::WireAdmissionCheck>(data) {
        let _ = wire::admission_check(&a);
    }
    if let Ok(q) = serde_json::from_slice::<wire::WireLocalQueue>(data) {
        let _ = wire::local_queue(&q);
    }
});
