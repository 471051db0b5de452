#!/usr/bin/env bash
# The tools of the real-VS-Code test (tests/test_vscode_real.py), which it skips without them:
# Debian's Chromium, code-server (VS Code served to a browser) in .e2e/, Python Playwright in .venv;
# nvim-dap for tests/test_nvim_dap.py, where GitHub can be reached; and for tests/test_emacs.py,
# Emacs (30.1 from bookworm-backports on Debian 12: dape needs 29.1+) with Debian's dap-mode, and
# dape where GitHub can be reached (it is on GNU ELPA, which is not among the registries here).
# Run after scripts/setup.sh. Safe to run again; about 15 minutes the first time (code-server builds
# native modules, hence libkrb5-dev).
set -euo pipefail
cd "$(dirname "$0")/.."

CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_VERSION=1.65.2

if ! command -v chromium >/dev/null || ! command -v rg >/dev/null || [ ! -e /usr/include/krb5.h ]; then
    as_root=()
    [ "$(id -u)" = 0 ] || as_root=(sudo -n)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium libkrb5-dev ripgrep >/dev/null
fi

# code-server's @vscode/ripgrep downloads a ripgrep binary from GitHub when it installs; with only
# the package registries reachable, hand it Debian's ripgrep through the cache it looks in first.
case "$(uname -m)" in
    x86_64) target=x86_64-unknown-linux-musl ;;
    aarch64) target=aarch64-unknown-linux-gnu ;;
    *) target="" ;;
esac
if [ -n "$target" ]; then
    cache="$(node -e 'console.log(require("os").tmpdir())')/vscode-ripgrep-cache-1.15.11"
    mkdir -p "$cache"
    staged="$(mktemp -d)"
    cp "$(command -v rg)" "$staged/rg"
    tar -czf "$cache/ripgrep-v13.0.0-10-$target.tar.gz" -C "$staged" rg
    rm -r "$staged"
fi

if [ ! -x .e2e/node_modules/.bin/code-server ]; then
    mkdir -p .e2e
    (cd .e2e && npm_config_yes=true npm_config_unsafe_perm=true \
        npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION")
fi
.venv/bin/pip install --quiet "playwright==$PLAYWRIGHT_VERSION"
# nvim-dap is on no package registry: tests/test_nvim_dap.py runs where GitHub can be reached.
if [ ! -d .e2e/nvim-dap ]; then
    timeout 60 git clone --quiet --depth 1 https://github.com/mfussenegger/nvim-dap .e2e/nvim-dap \
        || echo "nvim-dap could not be cloned: tests/test_nvim_dap.py will skip" >&2
fi
# Emacs and its two DAP clients (tests/test_emacs.py). On Debian 12 the Emacs is bookworm-backports'
# (30.1; bookworm's own 28.2 is too old for dape) from the mirror the machine already uses, with the
# backports' dh-elpa-helper that it needs. A failure here only makes that test skip.
install_emacs() {
    local as_root=() from=() mirror
    [ "$(id -u)" = 0 ] || as_root=(sudo -n)
    if grep -qs '^VERSION_CODENAME=bookworm' /etc/os-release; then
        if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
            mirror="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' | grep -v security | head -n 1)"
            [ -n "$mirror" ] || mirror="$(sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\) bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)"
            [ -n "$mirror" ] || return 1
            printf '%s\n' 'Types: deb' "URIs: $mirror" 'Suites: bookworm-backports' 'Components: main' \
                'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
                | "${as_root[@]}" tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
        fi
        from=(-t bookworm-backports)
    fi
    "${as_root[@]}" apt-get update -qq || return 1
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${from[@]}" emacs-nox dh-elpa-helper >/dev/null || return 1
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq elpa-dap-mode >/dev/null
}
if ! command -v emacs >/dev/null || ! dpkg -s elpa-dap-mode >/dev/null 2>&1; then
    install_emacs || echo "Emacs or dap-mode could not be installed: tests/test_emacs.py will skip" >&2
fi
if [ ! -d .e2e/dape ]; then
    mkdir -p .e2e
    timeout 60 git clone --quiet --depth 1 --branch 0.27.1 https://github.com/svaante/dape .e2e/dape \
        || echo "dape could not be cloned: tests/test_emacs.py runs dap-mode only" >&2
fi
echo "the editor tests' tools are in .e2e, .venv and the system"
