//! Plays dispatch's controller: renews its Lease every 2 s as a leader does, and can stop, or
//! hand over to a new holder (leaseTransitions + 1, new acquireTime).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Cluster;
use super::fixtures::micro_ago;

pub struct Controller {
    state: Arc<Mutex<Holder>>,
    running: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Holder {
    identity: String,
    acquired: String,
    transitions: i32,
}

/// Writes the Lease as a leader's renewal does (a full update of spec), as admin.
pub fn write_lease(c: &Cluster, ns: &str, name: &str, holder: &str, acquired: &str, transitions: i32, duration: i32) {
    let yaml = format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  holderIdentity: {holder}\n  leaseDurationSeconds: {duration}\n  acquireTime: \"{acquired}\"\n  renewTime: \"{}\"\n  leaseTransitions: {transitions}\n",
        micro_ago(0)
    );
    // A renewal can race an apiserver restart in the tests; a leader retries on its next tick.
    let _ = c.kubectl(
        &["apply", "--server-side", "--force-conflicts", "--field-manager=dispatch-admission", "-f", "-"],
        Some(&yaml),
    );
}

impl Controller {
    /// Starts renewing `ns/name` as `holder` every 2 s (the first renewal at once).
    pub fn start(c: &'static Cluster, ns: &str, name: &str, holder: &str, duration: i32) -> Controller {
        Controller::start_with(c, ns, name, holder, duration, 0)
    }

    fn start_with(
        c: &'static Cluster,
        ns: &str,
        name: &str,
        holder: &str,
        duration: i32,
        transitions: i32,
    ) -> Controller {
        let state = Arc::new(Mutex::new(Holder { identity: holder.into(), acquired: micro_ago(0), transitions }));
        let running = Arc::new(AtomicBool::new(true));
        // The first renewal happens before this returns, so a test sees this holder from now on.
        {
            let h = state.lock().unwrap();
            write_lease(c, ns, name, &h.identity, &h.acquired, h.transitions, duration);
        }
        let (s, r, ns, name) = (state.clone(), running.clone(), ns.to_string(), name.to_string());
        let thread = std::thread::spawn(move || {
            while r.load(Ordering::SeqCst) {
                for _ in 0..20 {
                    if !r.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                {
                    let h = s.lock().unwrap();
                    write_lease(c, &ns, &name, &h.identity, &h.acquired, h.transitions, duration);
                }
            }
        });
        Controller { state, running, thread: Some(thread) }
    }

    /// Stops renewing (the Lease is left as it is: ReleaseOnCancel is off).
    pub fn stop(&mut self) {
        self.running.store(false, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }

    /// After `stop`, a new leader takes over and renews from now on.
    pub fn take_over(
        c: &'static Cluster,
        old: &Controller,
        ns: &str,
        name: &str,
        holder: &str,
        duration: i32,
    ) -> Controller {
        let transitions = old.state.lock().unwrap().transitions + 1;
        Controller::start_with(c, ns, name, holder, duration, transitions)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop();
    }
}
