# Shared by scripts/test and scripts/crawl-sample: make the project venv and install archiver.
# Needs Python >= 3.11. On Debian, python3 -m venv needs python3-venv (installed when missing
# and we may use apt-get).

log() { echo "[$(basename "$0")] $*" >&2; }
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

apt_install() {  # apt_install PACKAGE...: install Debian packages (root or sudo)
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  command -v apt-get >/dev/null 2>&1 || die "need the Debian packages: $* (no apt-get here)"
  log "installing Debian packages: $*"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 \
    || die "apt-get install $* failed"
}

ensure_venv() {  # ensure_venv EXTRAS: .venv with archiver installed (editable) + extras; once
  local extras="$1" python="${PYTHON:-python3}"
  command -v "$python" >/dev/null 2>&1 || die "'$python' not found: install Python >= 3.11"
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "Python >= 3.11 is required ($("$python" --version 2>&1) found; set PYTHON=...)"
  if [ ! -x .venv/bin/python ] || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    rm -rf .venv
    if ! "$python" -m venv .venv >/dev/null 2>&1; then
      rm -rf .venv
      apt_install python3-venv
      "$python" -m venv .venv || die "'$python -m venv .venv' failed"
    fi
  fi
  local stamp=.venv/.archiver-install want
  want="$(install_key)" || die "cannot read pyproject.toml"
  # Installed already, from this checkout, with these extras (or more), and pyproject.toml's
  # [project] and [build-system] unchanged since: nothing to do, and no network needed.
  if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$want $extras" ] || [ "$(cat "$stamp")" = "$want dev" ]; }; then
    return 0
  fi
  log "installing archiver${extras:+ with [$extras]} into .venv"
  rm -f "$stamp"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extras:+[$extras]}" >&2 \
    || die "pip install failed (is PyPI reachable?)"
  echo "$want $extras" >"$stamp"
}

install_key() {  # what an install depends on: this checkout's path and how it is packaged
  .venv/bin/python - "$PWD" <<'PY'
import hashlib, json, sys, tomllib
with open("pyproject.toml", "rb") as fh:
    data = tomllib.load(fh)
packaging = json.dumps([sys.argv[1], data.get("project"), data.get("build-system")], sort_keys=True)
print(hashlib.sha256(packaging.encode()).hexdigest())
PY
}
