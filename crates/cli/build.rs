//! Release links on Linux put the functions a fresh `ferrite acp` runs on its way to its first
//! answers together at the start of the text (`startup.ld`, written by
//! `scripts/startup_order.py`, which says why). `FERRITE_STARTUP_ORDER=off` links without it:
//! for that script's trace, and for linkers without linker scripts (mold).

fn main() {
    println!("cargo::rerun-if-changed=startup.ld");
    println!("cargo::rerun-if-env-changed=FERRITE_STARTUP_ORDER");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let off = std::env::var("FERRITE_STARTUP_ORDER").is_ok_and(|v| v == "off");
    if os == "linux" && profile == "release" && !off {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo::rustc-link-arg-bin=ferrite=-Wl,-T,{dir}/startup.ld");
    }
}
