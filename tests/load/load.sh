#!/usr/bin/env bash
# Load run on loopback with wrk (Debian package wrk), measuring what metrics
# cost: it starts two servers from bin/foodsafe on the `make run` database
# (migrated, demo restaurant loaded, key in .data/demo-key; both done here
# when missing), one with metrics on and one with FOODSAFE_METRICS_ADDR=""
# (no instrumentation at all), rate limit raised so nothing answers 429.
# Each scenario runs ROUNDS pairs of DURATION runs against them, on/off and
# off/on in turn; reported are requests per second, server CPU time per
# request (user + system, from /proc) and p99 latency of each server, and
# for both of the first two the median over rounds of the on/off change;
# "metrics" is the share of CPU samples spent in internal/metrics in a
# PROFILE-second CPU profile of the metrics-on server under the same load,
# taken after the timed rounds (pprof on its operator listener, read with
# go tool pprof).
# Then it scrapes the "on" server, checks its request counters against
# wrk's totals, and keeps the scrape in .data/load-metrics.txt.
#
# Usage: make load [DURATION=5s] [ROUNDS=4] [PROFILE=15] [CONNECTIONS=16]
set -euo pipefail
BIN=${BIN:-bin/foodsafe}
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-4}
PROFILE=${PROFILE:-15}
CONNECTIONS=${CONNECTIONS:-16}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 2; }

"$BIN" migrate --create-database >/dev/null
if [ ! -s .data/demo-key ]; then
  mkdir -p .data && "$BIN" demo >.data/demo-key.tmp && mv .data/demo-key.tmp .data/demo-key
fi
KEY=$(cat .data/demo-key)

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME METRICS_ADDR: serve on a port the kernel picks; prints nothing,
# leaves the API address in $work/NAME.api and the metrics one in $work/NAME.ops.
start() {
  FOODSAFE_ADDR=127.0.0.1:0 FOODSAFE_METRICS_ADDR=$2 FOODSAFE_RATE_LIMIT=1000000000 FOODSAFE_LOG_LEVEL=warn \
    "$BIN" serve 2>"$work/$1.log" &
  pids+=($!)
  # Warn level hides the "listening" lines: find the sockets instead.
  local pid=$! want=1
  [ -n "$2" ] && want=2
  for _ in $(seq 1 100); do
    mapfile -t addrs < <(ss -Hltnp | grep "pid=$pid," | awk '{print $4}')
    [ "${#addrs[@]}" -ge "$want" ] && break
    sleep 0.1
  done
  [ "${#addrs[@]}" -ge "$want" ] || { echo "server $1 did not start" >&2; cat "$work/$1.log" >&2; exit 1; }
  : >"$work/$1.ops"
  for a in "${addrs[@]}"; do
    if [ -n "$2" ] && curl -fs -o /dev/null "http://$a/metrics"; then echo "$a" >"$work/$1.ops"; else echo "$a" >"$work/$1.api"; fi
  done
}
start on 127.0.0.1:0
start off ""
ON=http://$(cat "$work/on.api") OFF=http://$(cat "$work/off.api") OPS=http://$(cat "$work/on.ops")
ON_PID=${pids[0]} OFF_PID=${pids[1]}

TO=$(( $(date +%s) * 1000 )); FROM=$(( TO - 30 * 24 * 3600 * 1000 ))
scenarios=(
  "restaurants (auth only)|/v1/restaurants"
  "deliveries, last 30 days, 50 per page|/v1/restaurants/demo-bistro/deliveries?from=$FROM&to=$TO&limit=50"
  "walk page, 50 temperature records|/v1/restaurants/demo-bistro/collections/temperature-records/records?limit=50"
  "single record|/v1/restaurants/demo-bistro/collections/areas/records/area-1"
)

# cputicks PID: user+system CPU time the process has used, in clock ticks.
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))

# bench URL PID: one wrk run against the server PID; prints
# "req/s p99_ms requests non2xx server_cpu_us_per_request".
bench() {
  local t0 t1
  t0=$(cputicks "$2")
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $KEY" "$1" >"$work/wrk.out"
  t1=$(cputicks "$2")
  awk -v cpu=$(( (t1 - t0) * TICK_US )) '
    /Requests\/sec/ {rps=$2}
    / requests in / {n=$1}
    /Non-2xx/ {bad=$NF}
    $1=="99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; p99=v}
    END {printf "%s %s %s %d %.1f\n", rps, p99, n, bad+0, cpu/n}' "$work/wrk.out"
}

# Each round is a pair of runs, on then off or off then on (alternating),
# so slow drift on a shared machine cancels out; the table shows means and
# the median over rounds of each pair's on/off ratio, which one disturbed
# round cannot move.
total_on=0 total_bad=0 runs_on=0 warm_on=0
printf '%-40s %9s %9s %8s %9s %9s %8s %8s %8s %8s\n' "scenario ($ROUNDS rounds of $DURATION)" "on req/s" "off req/s" "median" \
  "on cpu/r" "off cpu/r" "median" "on p99" "off p99" "metrics"
for s in "${scenarios[@]}"; do
  name=${s%%|*} path=${s#*|}
  : >"$work/rounds"
  # Warm both servers (connections, prepared statements, caches), untimed.
  for u in "$ON" "$OFF"; do
    w=$(wrk -t2 -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $KEY" "$u$path" | awk '/ requests in / {print $1}')
    if [ "$u" = "$ON" ]; then warm_on=$(( warm_on + w )); runs_on=$(( runs_on + 1 )); fi
  done
  for r in $(seq 1 "$ROUNDS"); do
    if [ $(( r % 2 )) -eq 1 ]; then
      read -r a p n b u < <(bench "$ON$path" "$ON_PID")
      read -r c q _ d v < <(bench "$OFF$path" "$OFF_PID")
    else
      read -r c q _ d v < <(bench "$OFF$path" "$OFF_PID")
      read -r a p n b u < <(bench "$ON$path" "$ON_PID")
    fi
    total_on=$(( total_on + n )); total_bad=$(( total_bad + b + d )); runs_on=$(( runs_on + 1 ))
    echo "$a $c $u $v $p $q" >>"$work/rounds"
  done
  # A CPU profile of the metrics-on server under the same load, untimed;
  # the share of its samples with internal/metrics on the stack.
  curl -fsS -o "$work/cpu.prof" "$OPS/debug/pprof/profile?seconds=$PROFILE" &
  prof=$!
  wrk -t2 -c"$CONNECTIONS" -d"$(( PROFILE + 1 ))s" -H "Authorization: Bearer $KEY" "$ON$path" | awk '/ requests in / {print $1}' >"$work/prof.n"
  wait "$prof"
  warm_on=$(( warm_on + $(cat "$work/prof.n") )); runs_on=$(( runs_on + 1 ))
  share=$(go tool pprof -top -focus='foodsafe/internal/metrics\.' "$BIN" "$work/cpu.prof" 2>/dev/null |
    sed -nE 's/^Showing nodes accounting for [^,]+, ([0-9.]+%) of .*/\1/p')
  awk -v name="$name" -v share="${share:-0%}" '
    function median(x, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
    { k++; on += $1; off += $2; uc += $3; vc += $4; rr[k] = $1 / $2 - 1; cr[k] = $3 / $4 - 1
      if ($5 > p99on) p99on = $5; if ($6 > p99off) p99off = $6 }
    END { printf "%-40s %9.0f %9.0f %+7.1f%% %7.0fus %7.0fus %+7.1f%% %6.1fms %6.1fms %8s\n", name, on / k, off / k, median(rr, k) * 100,
      uc / k, vc / k, median(cr, k) * 100, p99on, p99off, share }' "$work/rounds"
done
[ "$total_bad" -eq 0 ] || echo "WARNING: $total_bad non-2xx answers" >&2

mkdir -p .data
curl -fsS "$OPS/metrics" >.data/load-metrics.txt
served=$(awk '/^foodsafe_http_requests_total\{/ && /route="\/v1\// {s+=$NF} END {printf "%d", s}' .data/load-metrics.txt)
echo
echo "metrics-on server: wrk completed $total_on requests (+$warm_on warming up and profiling); foodsafe_http_requests_total counts $served on /v1 routes"
echo "(the server may count up to $(( CONNECTIONS * runs_on )) more: $CONNECTIONS per wrk run, requests cut off when its time ran out)"
echo "scrape kept in .data/load-metrics.txt: $(grep -c '^# TYPE' .data/load-metrics.txt) families"
grep -E '^foodsafe_(audit_events_(written|dropped)_total|audit_buffered_events|ratelimit_backend|db_pool_(max|total)_connections|db_pool_empty_acquires_total) ' .data/load-metrics.txt || true
grep -E '^foodsafe_(authentications_total\{credential="key",outcome="ok"\}|walk_pages_total\{page="first",walk="(records|deliveries)"\}|audit_events_dropped_total)' .data/load-metrics.txt || true
