//! Runs one invocation: connect, then the verb. Returns the exit to use; errors are printed by
//! `main`, once.

use crate::cluster::connect;
use crate::commands::gate::{self, GateOptions};
use crate::commands::{Deps, lease};
use crate::error::Error;
use crate::exit::Exit;
use crate::settings::{Invocation, Verb};

pub async fn run(inv: &Invocation, deps: &mut Deps<'_>) -> Result<Exit, Error> {
    let conn = connect::connect(&inv.connection, inv.timeout, deps.log).await?;
    match &inv.verb {
        Verb::Gate { settings, output, all_states } => {
            let opts = GateOptions {
                settings,
                output: *output,
                all_states: *all_states,
                all_namespaces: inv.connection.all_namespaces,
                timeout: inv.timeout,
            };
            gate::run(&conn, &opts, deps).await
        }
        Verb::Lease { lease, output } => lease::run(&conn, lease, *output, inv.timeout, deps).await,
    }
}
