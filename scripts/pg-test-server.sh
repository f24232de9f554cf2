#!/usr/bin/env bash
# A throwaway PostgreSQL + pgvector server for the memory tests, from Debian's packages.
#
#   eval "$(scripts/pg-test-server.sh)"        # installs if missing, starts, exports the URL
#   scripts/pg-test-server.sh stop             # stops the server in $TINYHARNESS_TEST_PG_DIR
#
# Prints (stdout, for eval):
#   export TINYHARNESS_TEST_PG_URL=postgresql://tinyharness@127.0.0.1:PORT/tinyharness_test
#   export TINYHARNESS_TEST_PG_DIR=/tmp/...      (data dir and log; removed by `stop`)
# Everything else goes to stderr. The cluster runs as the unprivileged `postgres` user (created by
# the Debian package), listens on 127.0.0.1 only, on PGPORT if set or else a free port.
#
# Debian 12 (bookworm) ships PostgreSQL 15 but not pgvector (Debian has it from trixie on as
# postgresql-NN-pgvector). Where `apt-cache policy postgresql-NN-pgvector` has a candidate it is
# installed; otherwise the pgvector source package is fetched from Debian's archive with
# `apt-get source` (a private apt state dir; the system's sources are not changed) and built
# against postgresql-server-dev-NN.
set -euo pipefail

log() { echo "pg-test-server: $*" >&2; }

if [[ "${1:-}" == "stop" ]]; then
    dir="${2:-${TINYHARNESS_TEST_PG_DIR:-}}"
    [[ -n "$dir" && -d "$dir" ]] || { log "no server dir to stop"; exit 0; }
    bindir="$(cat "$dir/bindir")"
    su postgres -s /bin/sh -c "'$bindir/pg_ctl' -D '$dir/data' -m fast -w stop" >&2 || true
    rm -rf "$dir"
    log "stopped and removed $dir"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_install() {
    if [[ $apt_updated == 0 ]]; then apt-get update -qq >&2; apt_updated=1; fi
    apt-get install -y -qq "$@" >&2
}

pg_major() { ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1; }

if [[ -z "$(pg_major)" || ! -x "/usr/lib/postgresql/$(pg_major)/bin/initdb" ]]; then
    log "installing postgresql"
    apt_install postgresql
fi
major="$(pg_major)"
bindir="/usr/lib/postgresql/$major/bin"
sharedir="/usr/share/postgresql/$major"

if [[ ! -f "$sharedir/extension/vector.control" ]]; then
    if [[ $apt_updated == 0 ]]; then apt-get update -qq >&2; apt_updated=1; fi
    if apt-cache policy "postgresql-$major-pgvector" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        log "installing postgresql-$major-pgvector"
        apt_install "postgresql-$major-pgvector"
    else
        log "postgresql-$major-pgvector is not packaged for this release; building Debian's pgvector source"
        apt_install "postgresql-server-dev-$major" build-essential dpkg-dev
        work="$(mktemp -d)"
        chmod 755 "$work"  # apt's download user must be able to write the source files here
        mkdir -p "$work/lists/partial"
        # The machine's own Debian mirror, as its apt sources name it.
        mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
        [[ -n "$mirror" ]] || mirror="$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
        [[ -n "$mirror" ]] || { log "no Debian mirror in the apt sources"; exit 1; }
        cat >"$work/src.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        aptopts=(-o "Dir::Etc::sourcelist=$work/src.sources" -o Dir::Etc::sourceparts=/dev/null
                 -o "Dir::State::Lists=$work/lists")
        apt-get "${aptopts[@]}" update -qq >&2
        (cd "$work" && apt-get "${aptopts[@]}" source -qq pgvector >&2)
        srcdir="$(find "$work" -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
        make -s -C "$srcdir" PG_CONFIG="$bindir/pg_config" with_llvm=no >&2
        make -s -C "$srcdir" PG_CONFIG="$bindir/pg_config" with_llvm=no install >&2
        rm -rf "$work"
    fi
fi

port="${PGPORT:-}"
if [[ -z "$port" ]]; then
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi

dir="$(mktemp -d /tmp/tinyharness-pg.XXXXXX)"
chmod 755 "$dir"
echo "$bindir" >"$dir/bindir"
mkdir "$dir/data" "$dir/sock"
chown postgres:postgres "$dir/data" "$dir/sock"
as_pg() { su postgres -s /bin/sh -c "$1" >&2; }
as_pg "'$bindir/initdb' -D '$dir/data' -U tinyharness --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null"
as_pg "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/sock/server.log' -w -o \"-c listen_addresses=127.0.0.1 -p $port -k '$dir/sock' -c fsync=off -c max_connections=50\" start >/dev/null"
as_pg "'$bindir/psql' -h 127.0.0.1 -p $port -U tinyharness -d postgres -qc 'CREATE DATABASE tinyharness_test'"
as_pg "'$bindir/psql' -h 127.0.0.1 -p $port -U tinyharness -d tinyharness_test -qc 'CREATE EXTENSION IF NOT EXISTS vector'"

url="postgresql://tinyharness@127.0.0.1:$port/tinyharness_test"
log "PostgreSQL $major + pgvector on $url (data in $dir)"
echo "export TINYHARNESS_TEST_PG_URL=$url"
echo "export TINYHARNESS_TEST_PG_DIR=$dir"
