//! Tests of the configuration: the file (reading, errors, writing, saving) and the
//! admin changes.

mod admin;
mod file;
mod store;

use super::ControlConfig;

/// The configuration of the module documentation, with a second pool and job.
const EXAMPLE: &str = r#"
interval = "1s"

[admin]
group = "sluiceadm"
token_file = "/etc/sluice/token"
tls_cert = "/etc/sluice/cert.pem"
tls_key = "/etc/sluice/key.pem"
client_ca = "/etc/sluice/ca.pem"

[[pool]]
name = "scratch-md"
match = "class=metadata mount=/scratch/"
capacity = "10000/s"
algorithm = "psfa"
params = { epsilon = 0.25 }

[[pool]]
name = "scratch-bw"
match = "mount=/scratch"
capacity = "10GiB/s"
algorithm = "reservations"
params = { work_conserving = false }
min_share = 0.05

[[rule]]
rule = "cap-alice: user=alice op=open rate=2k/s"

[[job]]
job = "4242"
pool = "scratch-md"
limit = "5k/s"
weight = 2.0

[[job]]
job = "4242"
weight = 3
"#;

fn example() -> ControlConfig {
    ControlConfig::parse(EXAMPLE).unwrap()
}
