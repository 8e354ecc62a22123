//! Reading the facts once: discovery, lists and gets (paged, as kubectl pages, by the one
//! [`pager`] the live modes' lists use too), the wire types they decode into, access reviews,
//! and what a failed read means ([`failure`]).

pub mod failure;
pub mod fetch;
pub mod holder;
pub mod items;
pub mod pager;
pub mod review;
pub mod wire;
pub mod workload;

use crate::cluster::connecting::connect::Connection;

impl failure::Endpoint for Connection {
    fn server(&self) -> &str {
        &self.server
    }

    fn proxy(&self) -> Option<&str> {
        self.proxy.as_deref()
    }
}
