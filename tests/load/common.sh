# Sourced by the load scripts: finding a serve's API address, and the CPU
# time of processes from /proc.
#
# serve_api_addr PID LOG prints the API
# address of the serve process PID once it answers /health/live (the
# listener that also answers /metrics is the operator listener, not the
# API), waiting up to 10 s; otherwise it prints LOG and fails.
serve_api_addr() {
  local pid=$1 log=$2 api=""
  for _ in $(seq 1 100); do
    api=$(ss -Hltnp | grep "pid=$pid," | awk '{print $4}' | while read -r a; do
      curl -fs -o /dev/null "http://$a/health/live" && ! curl -fs -o /dev/null "http://$a/metrics" && echo "$a"; done | head -1) || true
    [ -n "$api" ] && break
    sleep 0.1
  done
  [ -n "$api" ] || { echo "serve (pid $pid) did not start" >&2; cat "$log" >&2; return 1; }
  echo "$api"
}

# dbticks URL FILE: "pid ticks" of every backend of URL's database (user
# plus system CPU in clock ticks, from /proc), for the database's time per
# request: pg_stat_statements needs shared_preload_libraries, which a
# shared server may not have.
dbticks() {
  psql "$1" -Atc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()" |
    while read -r p; do [ -r "/proc/$p/stat" ] && ticks "$p"; done >"$2" || true
}
# dbus BEFORE AFTER REQUESTS: the CPU microseconds per request between two
# dbticks (or proc_ticks) files (a process that left between them is not
# counted).
dbus() {
  awk -v n="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR { b[$1] = $2; next } { d += $2 - b[$1] }
    END { if (n > 0) printf "%.0f", d / hz * 1e6 / n; else printf "-" }' "$1" "$2"
}
# ticks PID: "pid ticks", the process's user plus system CPU in clock ticks.
ticks() { awk -v p="$1" '{ print p, $14 + $15 }' "/proc/$1/stat"; }
# proc_ticks PID FILE: one process's ticks, as dbticks writes them.
proc_ticks() { ticks "$1" >"$2"; }
