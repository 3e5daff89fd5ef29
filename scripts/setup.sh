#!/usr/bin/env bash
# Installs what the tests need on a fresh machine; every step is skipped when
# its result is already there. Python packages go into a venv under the cache.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
cd "$LOGSTORE_ROOT"

echo "setup: Go modules"
go mod download

venv="$LOGSTORE_CACHE/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyarrow' 2>/dev/null; then
  echo "setup: pyarrow (independent Parquet reader) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check pyarrow
fi
if ! "$venv/bin/python" -c 'import pyiceberg, sqlalchemy' 2>/dev/null; then
  echo "setup: pyiceberg (independent reader of the Iceberg sink's tables) into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'pyiceberg[sql-sqlite,pyarrow]>=0.12'
fi
if ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  echo "setup: duckdb (reads the files sink's output as users do: TestPartitionedFilesReadByReadersWithDefaults) into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check duckdb
fi

# The REST catalog test (TestE2EIcebergRESTCatalogExactlyOnce) runs Apache
# Iceberg's REST catalog test server; Maven resolves its jars (about 60 MB).
bash "$here/iceberg-rest.sh" install

# The zone lab (scripts/zonelab.sh) counts cross-zone bytes with iptables.
if ! command -v iptables >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: iptables (the zone lab's byte counters) from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null
fi
