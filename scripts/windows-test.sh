#!/usr/bin/env bash
# Cross-builds zeroclaw.exe for x86_64-pc-windows-gnu and tests it under Wine over its
# named pipe (issue 15; SPEC §2, §11). Steps, each with a timeout:
#   1. install Debian's rustc-web/cargo-web (+ library source), mingw-w64 and wine64;
#   2. build zeroclaw.exe in release with Debian's cargo, -Zbuild-std, into target/windows;
#   3. build the bcryptprimitives.dll stub (scripts/windows/processprng.c) next to it;
#   4. run scripts/windows/pipe_test.py: the daemon under Wine, its clients, the checks.
# Prints PASS/FAIL lines; exits 0 when everything passed, 1 on a failure, and 77 (skip)
# only when the packages cannot be installed. Safe without a terminal (CI=true, no stdin).
#
# Environment: ZEROCLAW_WINDOWS_LTO=1 builds with the release profile's fat LTO (slow on
# small machines; off by default, which is the only difference from a plain release build).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

export DEBIAN_FRONTEND=noninteractive
export WINEDEBUG=-all
export WINEPREFIX=${WINEPREFIX:-$repo/target/windows/wineprefix}
export WINEDLLOVERRIDES="bcryptprimitives=n,b;mscoree,mshtml="
target=x86_64-pc-windows-gnu
target_dir=$repo/target/windows
exe=$target_dir/$target/release/zeroclaw.exe
packages=(rustc-web cargo-web rust-web-src binutils-mingw-w64-x86-64 gcc-mingw-w64-x86-64)
started=$(date +%s)

say() { printf '[windows-test %3ds] %s\n' "$(($(date +%s) - started))" "$*"; }
fail() { echo "FAIL $*"; exit 1; }

# 1. Packages.
missing=()
for p in "${packages[@]}" wine64; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      echo "SKIP windows-test: packages missing (${missing[*]}) and no root to install them"
      exit 77
    fi
  fi
  if ! { timeout 600 "${sudo[@]}" apt-get update -q </dev/null &&
         timeout 1200 "${sudo[@]}" apt-get install -y -q "${packages[@]}" </dev/null &&
         timeout 1200 "${sudo[@]}" apt-get install -y -q --no-install-recommends wine64 </dev/null; } \
       >"$repo/target/windows-apt.log" 2>&1; then
    tail -20 "$repo/target/windows-apt.log"
    echo "SKIP windows-test: could not install ${missing[*]} (log: target/windows-apt.log)"
    exit 77
  fi
fi
echo "PASS packages installed"

# Debian's toolchain, called explicitly (a rustup toolchain usually comes first on PATH).
cargo=/usr/bin/cargo
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
unset RUSTC_WRAPPER RUSTFLAGS CARGO_BUILD_RUSTFLAGS
wine=$(dpkg -L wine64 | grep -m1 -E '/wine64$' || true)
wineserver=$(dpkg -L wine64 | grep -m1 -E '/wineserver(64)?$' || true)
[ -x "$wine" ] || fail "wine64 loader not found in the wine64 package"
say "$("$RUSTC" --version); $(basename "$wine") from $wine"

# 2. Cross build.
lto=(--config profile.release.lto=false --config profile.release.codegen-units=16)
[ "${ZEROCLAW_WINDOWS_LTO:-0}" = 1 ] && lto=()
say "building zeroclaw.exe (release${lto:+, LTO off}) into $target_dir"
build_start=$(date +%s)
if ! CARGO_TARGET_DIR=$target_dir timeout 5400 "$cargo" build --release --locked \
    -p zeroclaw --bin zeroclaw --target $target -Zbuild-std=std,panic_abort \
    --config "target.$target.linker=\"x86_64-w64-mingw32-gcc\"" "${lto[@]}" </dev/null; then
  fail "cross build of zeroclaw.exe"
fi
echo "PASS cross build of zeroclaw.exe ($(($(date +%s) - build_start)) s, $(du -h "$exe" | cut -f1))"

# 3. The ProcessPrng stub for Wine 8.0.
timeout 120 x86_64-w64-mingw32-gcc -shared -O2 -Wall -o "$(dirname "$exe")/bcryptprimitives.dll" \
  scripts/windows/processprng.c -lbcrypt </dev/null || fail "build of the bcryptprimitives.dll stub"
echo "PASS bcryptprimitives.dll stub built"

# 4. Under Wine. The first run creates the prefix (about 20 s).
mkdir -p "$WINEPREFIX"
cleanup() { [ -n "$wineserver" ] && timeout 30 "$wineserver" -k >/dev/null 2>&1 || true; }
trap cleanup EXIT
say "preparing the Wine prefix $WINEPREFIX"
if ! timeout 300 "$wine" "$exe" --version </dev/null >"$target_dir/wine-version.txt" 2>&1; then
  cat "$target_dir/wine-version.txt"
  fail "zeroclaw.exe --version under Wine"
fi
echo "PASS zeroclaw.exe runs under Wine: $(tr -d '\r' <"$target_dir/wine-version.txt" | tail -1)"

say "running the named-pipe checks"
rc=0
timeout 900 python3 scripts/windows/pipe_test.py --wine "$wine" --exe "$exe" </dev/null || rc=$?
say "done (exit $rc)"
exit $rc
