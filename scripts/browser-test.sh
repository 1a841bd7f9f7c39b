#!/usr/bin/env bash
# Runs the dashboard's browser tests (SPEC §20, §22) in a real headless Chromium: the
# `dashboard::`, `dashboard_daily::`, `dashboard_real::`, `dashboard_schedules::` and
# `dashboard_notify::` modules of the e2e binary (crates/zeroclaw-e2e/tests/e2e/) and the one
# browser test each of `daily_ask::`, `plan_mode::` (the plan card's Implement button,
# SPEC §26), `budgets::` (a budget card's Raise, §24.2) and `background::` (the processes
# panel, §26). Installs
# Debian's `chromium` when it is missing, runs those tests with --ignored (a plain `cargo
# test` ignores them because they need the browser) and fails when any fails or none ran.
# Exits 77 (skip) only when the browser cannot be installed. Safe without a terminal
# (CI=true, no stdin).
#
# The tests write screenshots to target/dashboard-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export DEBIAN_FRONTEND=noninteractive

have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }

if ! have_chromium; then
  echo "browser-test: installing chromium"
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      echo "SKIP browser-test: chromium is not installed and there is no root to install it"
      exit 77
    fi
  fi
  mkdir -p "$repo/target"
  if ! { timeout 600 "${sudo[@]}" apt-get update -q </dev/null &&
         timeout 1200 "${sudo[@]}" apt-get install -y -q chromium </dev/null; } \
       >"$repo/target/browser-apt.log" 2>&1 || ! have_chromium; then
    tail -20 "$repo/target/browser-apt.log"
    echo "SKIP browser-test: could not install chromium (log: target/browser-apt.log)"
    exit 77
  fi
fi
echo "browser-test: $( (chromium --version || chromium-browser --version) 2>/dev/null | head -1)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# The e2e tests start target/debug/zeroclaw, which `cargo test -p zeroclaw-e2e` does not
# build (crates/zeroclaw-e2e/src/lib.rs): build it, with the test hooks the tests use.
cargo build -p zeroclaw --features test-hooks
# One test at a time: each starts a daemon and a browser, and the machine may be small.
cargo test -p zeroclaw-e2e --test e2e -- --ignored --test-threads=1 dashboard:: dashboard_daily:: dashboard_real:: dashboard_schedules:: dashboard_notify:: \
  daily_ask::the_dashboards_form_goes_when_the_question_is_answered_elsewhere \
  plan_mode::the_dashboards_implement_button_accepts_the_plan \
  budgets::the_dashboard_answers_a_budget_request_with_raise \
  background::the_dashboard_shows_the_processes_and_their_output 2>&1 | tee "$log" || status=$?
if ! grep -qE '^test result: ok\. [1-9][0-9]* passed; 0 failed' "$log"; then
  echo "browser-test: FAILED (or no test ran)" >&2
  exit 1
fi
exit "$status"
