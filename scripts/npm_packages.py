#!/usr/bin/env python3
"""Builds Ferrite's npm packages: `@ferrite-agent/ferrite` (the `ferrite` command, npm/launcher.js)
and one `@ferrite-agent/ferrite-<os>-<cpu>` per platform holding that platform's binary, which the
main package lists as optional dependencies (npm installs only the one whose `os`/`cpu` match).
No install script and no download at install time: the binaries are in the packages.

    scripts/npm_packages.py --out DIR --archives DIST_DIR        # from the release archives
    scripts/npm_packages.py --out DIR --binary linux-x64=target/release/ferrite --only-built

Each package is left in DIR/<name>/ and packed with `npm pack` into DIR/*.tgz. `--only-built`
lists only the platforms given as optional dependencies (a local test has no registry to fetch
the others from).
"""

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCOPE = "@ferrite-agent"
# npm's platform-arch → the Rust target whose archive dist publishes (dist-workspace.toml).
PLATFORMS = {
    "darwin-arm64": "aarch64-apple-darwin",
    "darwin-x64": "x86_64-apple-darwin",
    "linux-arm64": "aarch64-unknown-linux-gnu",
    "linux-x64": "x86_64-unknown-linux-gnu",
    "win32-arm64": "aarch64-pc-windows-msvc",
    "win32-x64": "x86_64-pc-windows-msvc",
}


def workspace() -> dict:
    return tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]


def binary_from_archive(archives: Path, target: str) -> bytes | None:
    """The `ferrite` binary inside dist's archive for `target`, laid out as dist packs it."""
    tar = archives / f"ferrite-{target}.tar.gz"
    if tar.exists():
        with tarfile.open(tar) as t:
            return t.extractfile(f"ferrite-{target}/ferrite").read()
    zipped = archives / f"ferrite-{target}.zip"
    if zipped.exists():
        with zipfile.ZipFile(zipped) as z:
            return z.read("ferrite.exe")
    return None


def platform_package(out: Path, key: str, binary: bytes, meta: dict) -> str:
    name = f"{SCOPE}/ferrite-{key}"
    os_name, cpu = key.split("-")
    exe = "ferrite.exe" if os_name == "win32" else "ferrite"
    pkg = out / f"ferrite-{key}"
    (pkg / "bin").mkdir(parents=True, exist_ok=True)
    (pkg / "bin" / exe).write_bytes(binary)
    (pkg / "bin" / exe).chmod(0o755)
    shutil.copy(ROOT / "LICENSE", pkg / "LICENSE")
    manifest = {
        "name": name,
        "version": meta["version"],
        "description": f"The Ferrite binary for {key} (installed by {SCOPE}/ferrite).",
        "license": meta["license"],
        "repository": meta["repository"],
        "os": [os_name],
        "cpu": [cpu],
        "files": ["bin", "LICENSE"],
        "preferUnplugged": True,
    }
    (pkg / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return name


def main_package(out: Path, platforms: list[str], meta: dict) -> None:
    pkg = out / "ferrite"
    (pkg / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "npm" / "launcher.js", pkg / "bin" / "ferrite.js")
    (pkg / "bin" / "ferrite.js").chmod(0o755)
    shutil.copy(ROOT / "LICENSE", pkg / "LICENSE")
    manifest = {
        "name": f"{SCOPE}/ferrite",
        "version": meta["version"],
        "description": "Ferrite: a coding agent for editors, over the Agent Client Protocol "
        "(`npx @ferrite-agent/ferrite acp`).",
        "license": meta["license"],
        "repository": meta["repository"],
        "bin": {"ferrite": "bin/ferrite.js"},
        "files": ["bin", "LICENSE"],
        "engines": {"node": ">=18"},
        "optionalDependencies": {
            f"{SCOPE}/ferrite-{key}": meta["version"] for key in sorted(platforms)
        },
    }
    (pkg / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--archives", type=Path, help="directory of dist's archives")
    parser.add_argument("--binary", action="append", default=[], help="PLATFORM=PATH")
    parser.add_argument("--only-built", action="store_true")
    args = parser.parse_args()
    meta = workspace()
    binaries: dict[str, bytes] = {}
    for spec in args.binary:
        key, _, path = spec.partition("=")
        if key not in PLATFORMS:
            parser.error(f"unknown platform {key!r}; one of {', '.join(PLATFORMS)}")
        binaries[key] = Path(path).read_bytes()
    if args.archives:
        for key, target in PLATFORMS.items():
            found = binary_from_archive(args.archives, target)
            if found is not None:
                binaries.setdefault(key, found)
    if not binaries:
        parser.error("no binary: give --archives or --binary")
    missing = sorted(set(PLATFORMS) - set(binaries))
    if missing and not args.only_built:
        parser.error(f"no binary for {', '.join(missing)} (or pass --only-built)")
    args.out.mkdir(parents=True, exist_ok=True)
    for key, binary in sorted(binaries.items()):
        platform_package(args.out, key, binary, meta)
    main_package(args.out, list(binaries), meta)
    dirs = [f"./ferrite-{key}" for key in sorted(binaries)] + ["./ferrite"]
    subprocess.run(["npm", "pack", "--silent", *dirs], cwd=args.out, check=True,
                   stdout=subprocess.DEVNULL)
    for tgz in sorted(args.out.glob("*.tgz")):
        print(tgz)
    return 0


if __name__ == "__main__":
    sys.exit(main())
