//! What a read returned, with "not there" and "not allowed" as data rather than errors: a
//! missing Lease makes the gate *no*, a Lease we may not read makes it *unknown*.

/// The outcome of reading one object or one list.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched<T> {
    Found(T),
    /// The server said 404 for the object (never used for a list).
    Missing,
    /// The server said 403; the value names the RBAC rule that would allow the read.
    Forbidden(Denied),
}

/// A read the server refused, and the rule that would have allowed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The RBAC rule that is missing, e.g. `get leases in namespace dispatch-system`.
    pub rule: String,
}

impl<T> Fetched<T> {
    pub fn found(&self) -> Option<&T> {
        match self {
            Fetched::Found(t) => Some(t),
            _ => None,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Fetched<U> {
        match self {
            Fetched::Found(t) => Fetched::Found(f(t)),
            Fetched::Missing => Fetched::Missing,
            Fetched::Forbidden(d) => Fetched::Forbidden(d),
        }
    }
}
