//! Reading the application's memory safely: the probe's reads ([`probe`]), which a fault
//! never kills, and the stage's handler of SIGSEGV and SIGBUS ([`signals`]) that turns a
//! fault inside them into an answer, while keeping the program's own dispositions of both
//! signals as they would be without the stage.

pub(crate) mod probe;
#[cfg(target_arch = "x86_64")]
// In unit tests its hooks of sigaction & co are not exported, so nothing calls them.
#[cfg_attr(test, allow(dead_code))]
pub(crate) mod signals;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;
