//! `registry/agent.json`, the entry for the ACP agent registry (what Zed, JetBrains and other
//! clients install agents from): valid against the registry's own schema (vendored beside it, the
//! registry's `agent.schema.json`), and pointing at the archives the release workflow publishes
//! for this very version. A release that bumps the workspace version without the entry fails here.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Registry platform → the Rust target whose archive dist publishes for it (`dist-workspace.toml`).
const PLATFORMS: [(&str, &str); 6] = [
    ("darwin-aarch64", "aarch64-apple-darwin"),
    ("darwin-x86_64", "x86_64-apple-darwin"),
    ("linux-aarch64", "aarch64-unknown-linux-gnu"),
    ("linux-x86_64", "x86_64-unknown-linux-gnu"),
    ("windows-aarch64", "aarch64-pc-windows-msvc"),
    ("windows-x86_64", "x86_64-pc-windows-msvc"),
];

fn registry_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../registry")
}

fn read_json(name: &str) -> Value {
    let path = registry_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn agent_entry_validates_against_the_registry_schema() {
    let schema = read_json("agent.schema.json");
    let entry = read_json("agent.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&entry)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "registry/agent.json: {errors:#?}");
}

#[test]
fn the_schema_rejects_what_the_registry_rejects() {
    // Guards the check above: a validator that accepts anything would pass it too.
    let schema = read_json("agent.schema.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut entry = read_json("agent.json");
    entry["distribution"]["binary"]["plan9-mips"] =
        entry["distribution"]["binary"]["linux-x86_64"].clone();
    assert!(!validator.is_valid(&entry));
    let mut entry = read_json("agent.json");
    entry["id"] = "Ferrite Agent".into();
    assert!(!validator.is_valid(&entry));
}

#[test]
fn agent_entry_follows_the_crate_version_and_repository() {
    let entry = read_json("agent.json");
    let version = env!("CARGO_PKG_VERSION");
    let repository = env!("CARGO_PKG_REPOSITORY");
    assert_eq!(entry["id"], "ferrite");
    assert_eq!(
        entry["version"], version,
        "bump registry/agent.json with the workspace version"
    );
    assert_eq!(entry["repository"], repository);
    assert_eq!(entry["license"], env!("CARGO_PKG_LICENSE"));

    let binary = entry["distribution"]["binary"].as_object().unwrap();
    let listed: Vec<&str> = binary.keys().map(String::as_str).collect();
    let expected: Vec<&str> = PLATFORMS.iter().map(|(platform, _)| *platform).collect();
    assert_eq!(listed, expected, "one archive for every registry platform");

    for (platform, target) in PLATFORMS {
        let build = &binary[platform];
        // dist's layout: zips hold the binary at the top, tarballs inside a directory named
        // after the archive.
        let (archive, cmd) = if platform.starts_with("windows") {
            (format!("ferrite-{target}.zip"), "./ferrite.exe".to_owned())
        } else {
            (
                format!("ferrite-{target}.tar.gz"),
                format!("./ferrite-{target}/ferrite"),
            )
        };
        let url = format!("{repository}/releases/download/v{version}/{archive}");
        assert_eq!(build["archive"], url.as_str(), "{platform}");
        assert_eq!(build["cmd"], cmd.as_str(), "{platform}");
        assert_eq!(build["args"], serde_json::json!(["acp"]), "{platform}");
    }
}

#[test]
fn icon_is_a_16px_current_color_svg() {
    let path = registry_dir().join("icon.svg");
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"), "{}", path.display());
    assert!(svg.contains(r#"width="16""#) && svg.contains(r#"height="16""#));
    assert!(svg.contains(r#"viewBox="0 0 16 16""#));
    // The registry's check: clients theme icons, so every fill and stroke is currentColor/none.
    for attr in ["fill=\"", "stroke=\""] {
        for value in svg.split(attr).skip(1) {
            let value = value.split('"').next().unwrap_or_default();
            assert!(
                matches!(value, "currentColor" | "none"),
                "icon.svg: hard-coded {attr}{value}\""
            );
        }
    }
    assert!(svg.contains("currentColor"));
}

/// The Action installs the release it belongs to (a pinned version, not `latest`), and the
/// licence the entry names ships beside the binary.
#[test]
fn the_action_is_pinned_and_the_licence_ships() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let version_input = action
        .split("\n  version:\n")
        .nth(1)
        .expect("a `version` input");
    let default = version_input
        .lines()
        .find_map(|l| l.trim().strip_prefix("default:"))
        .expect("a default version")
        .trim()
        .trim_matches('"');
    assert_eq!(
        default,
        env!("CARGO_PKG_VERSION"),
        "action.yml pins this release"
    );

    let licence = std::fs::read_to_string(root.join("LICENSE")).unwrap();
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
    assert!(licence.contains("Apache License") && licence.contains("Version 2.0"));
    // dist packs the files it finds beside the binary's manifest into every archive.
    let packed = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("LICENSE"));
    assert_eq!(packed.unwrap(), licence);
    let entry = read_json("agent.json");
    // The npm package (scripts/npm_packages.py) of the same release, started the same way.
    assert_eq!(
        entry["distribution"]["npx"]["package"],
        format!("@ferrite-agent/ferrite@{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(entry["distribution"]["npx"]["args"][0], "acp");
    assert!(
        entry["authors"][0].as_str().unwrap().contains("https://"),
        "authors name a contact"
    );
}
