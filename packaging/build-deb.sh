#!/usr/bin/env bash
# Build pipelab's Debian package (target/debian/pipelab_VERSION_ARCH.deb):
# the binaries, the manual pages and shell completions generated from the
# command-line definitions, then cargo-deb (install it with `cargo
# install cargo-deb --locked`). The package's contents are listed in
# crates/cli/Cargo.toml, [package.metadata.deb].
#
# PROFILE=dev packages the test build instead of a release build (CI
# does, to check the package without compiling everything twice).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${PROFILE:-release}
case "$profile" in
    release) dir=target/release ;;
    dev) dir=target/debug ;;
    *) dir=target/$profile ;;
esac
cargo build --profile "$profile" --locked -p pipelab
assets=$dir/assets
rm -rf "$assets"
mkdir -p "$assets/completions"
"$dir/pipelab" man "$assets/man" >/dev/null
"$dir/pipelab" completions bash > "$assets/completions/pipelab"
"$dir/pipelab" completions zsh > "$assets/completions/_pipelab"
"$dir/pipelab" completions fish > "$assets/completions/pipelab.fish"
cargo deb -p pipelab --no-build --locked --profile "$profile" --strip -o target/debian/
