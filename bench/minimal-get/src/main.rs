//! One GET of a Lease, printed as JSON: the floor for the plugin's one-shot calls.
//! Usage: minimal-get [NAMESPACE/NAME]   (default dispatch-system/dispatch-admission;
//! kubeconfig from $KUBECONFIG, as kube's Client::try_default reads it)

use std::process::ExitCode;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "dispatch-system/dispatch-admission".into());
    let Some((ns, name)) = arg.split_once('/') else {
        eprintln!("error: expected NAMESPACE/NAME, got {arg:?}");
        return ExitCode::from(2);
    };
    let client = match Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match Api::<Lease>::namespaced(client, ns).get(name).await {
        Ok(lease) => {
            println!("{}", serde_json::to_string_pretty(&lease).expect("a Lease serializes"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
