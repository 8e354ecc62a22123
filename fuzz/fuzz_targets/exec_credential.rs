//! What an exec credential plugin prints on stdout: an `ExecCredential` with a token, a client
//! certificate and key, an expiry; or anything else. Parsed for each apiVersion kubectl
//! accepts (and one it does not), an answer or an error, never a panic.

#![no_main]

use kubectl_dispatch::cluster::connecting::exec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for version in [
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    ] {
        let _ = exec::parse(data, version);
    }
});
