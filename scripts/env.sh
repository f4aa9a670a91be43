# Shared set-up for the project's scripts (sourced, not run): puts the build outside the
# clone so repeated runs are fast, and installs what the build and tests need on a fresh
# Debian machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/icefloe/target}"
mkdir -p "$CARGO_TARGET_DIR"
# Colour only on a terminal: logs and CI output stay free of escape codes.
if [ -t 1 ]; then
  export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-auto}"
else
  export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}" NO_COLOR="${NO_COLOR:-1}"
fi
# Where the scripts log what would drown their output (apt, tool installs).
export ICEFLOE_LOG_DIR="${ICEFLOE_LOG_DIR:-$HOME/.cache/icefloe/logs}"
mkdir -p "$ICEFLOE_LOG_DIR"

# Installs the Debian packages that are missing (needs root or sudo). Installed packages are
# never upgraded (--no-upgrade); apt's output goes to $ICEFLOE_LOG_DIR/apt.log.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  local log="$ICEFLOE_LOG_DIR/apt.log"
  echo "installing Debian packages: ${missing[*]} (log: $log)" >&2
  if ! { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-upgrade \
        -o Dpkg::Use-Pty=0 "${missing[@]}"; } >>"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "apt-get install failed (log: $log)" >&2
    return 1
  fi
}

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "cargo not found: install Rust (https://rustup.rs) first" >&2
    exit 1
  fi
fi
apt_install gcc pkg-config python3

# A build directory outside the clone is shared by every checkout that uses it, and cargo does
# not rebuild a workspace crate whose sources are older than its build in another checkout: the
# paths compiled into tests (CARGO_MANIFEST_DIR: fixtures, scripts) would then name the other
# checkout's files. So the workspace's own crates are rebuilt when the checkout changes.
checkout_mark="$CARGO_TARGET_DIR/.icefloe-checkout"
if [ "$(cat "$checkout_mark" 2>/dev/null || true)" != "$ROOT" ]; then
  if [ -e "$checkout_mark" ]; then
    echo "build directory $CARGO_TARGET_DIR was used by $(cat "$checkout_mark"): rebuilding this checkout's crates" >&2
    for p in release dev; do
      (cd "$ROOT" && cargo clean --workspace --profile "$p" --quiet)
    done
  fi
  echo "$ROOT" >"$checkout_mark"
fi
