#!/usr/bin/env bash
# make bench-traces: what tracing costs a request. Starts Jaeger all-in-one
# (bin/jaeger, built from tests/tools/jaeger, the tests' trace receiver,
# configured by tests/testdata/jaeger.yaml) on loopback ports, then runs
# make bench-http's script (tests/load/bench-http.sh) on the rows of
# BENCH_ROWS, ROUNDS times, each round three ways back to back:
#   off      bin/foodsafe, no OTEL_* variable: tracing off;
#   before   OLD (a binary built from an earlier commit), when OLD is set:
#            what tracing off is compared with;
#   traced   bin/foodsafe with every request sampled (always_on) and
#            exported to the Jaeger above, with a span queue large enough
#            that none is dropped while Jaeger keeps up.
# Each run prints bench-http's table: req/s, p50, p99, the database's and
# serve's own CPU time per request (svc us/req), and the ratios to the same
# SQL under pgbench and to the bare stack. After each traced run, Jaeger's
# CPU time over it. The cost of tracing a request is the traced run's svc
# us/req less the off run's of the same round.
#
# Usage: make bench-traces [OLD=path] [ROUNDS=2] [DURATION=10s]
#   [BENCH_ROWS="first single new"]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/load/common.sh
JAEGER=${JAEGER:-bin/jaeger}
ROUNDS=${ROUNDS:-2}
export BENCH_ROWS=${BENCH_ROWS:-first single new}
[ -x "$JAEGER" ] || { echo "$JAEGER is missing: run make bench-traces" >&2; exit 2; }
[ -z "${OLD:-}" ] || [ -x "$OLD" ] || { echo "OLD=$OLD is not an executable" >&2; exit 2; }

free_addr() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print("127.0.0.1:%d" % s.getsockname()[1])'; }
work=$(mktemp -d)
jpid=
cleanup() {
  [ -n "$jpid" ] && { kill "$jpid" 2>/dev/null || true; wait "$jpid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
otlp=$(free_addr); query=$(free_addr); grpc=$(free_addr)
sed -e "s/QUERY_ADDR/$query/; s/GRPC_ADDR/$grpc/; s/OTLP_ADDR/$otlp/" tests/testdata/jaeger.yaml >"$work/jaeger.yaml"
HOME=$work "$JAEGER" --config "file:$work/jaeger.yaml" >"$work/jaeger.log" 2>&1 &
jpid=$!
for _ in $(seq 1 300); do curl -fs -o /dev/null "http://$query/api/services" && break; sleep 0.1; done
curl -fs -o /dev/null "http://$query/api/services" || { echo "jaeger did not start" >&2; cat "$work/jaeger.log" >&2; exit 1; }
echo "jaeger (pid $jpid): OTLP on $otlp, query API on $query; load average: $(cat /proc/loadavg)"

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round, tracing off (bin/foodsafe); load average: $(cat /proc/loadavg)"
  tests/load/bench-http.sh
  if [ -n "${OLD:-}" ]; then
    echo "== round $round, before ($OLD); load average: $(cat /proc/loadavg)"
    BIN=$OLD tests/load/bench-http.sh
  fi
  echo "== round $round, every request traced and exported; load average: $(cat /proc/loadavg)"
  proc_ticks "$jpid" "$work/j.before"
  start=$(date +%s)
  OTEL_EXPORTER_OTLP_ENDPOINT=http://$otlp OTEL_SERVICE_NAME=bench-traces OTEL_TRACES_SAMPLER=always_on \
    OTEL_BSP_MAX_QUEUE_SIZE=65536 OTEL_BSP_MAX_EXPORT_BATCH_SIZE=2048 tests/load/bench-http.sh
  proc_ticks "$jpid" "$work/j.after"
  awk -v hz="$(getconf CLK_TCK)" -v s=$(( $(date +%s) - start )) 'NR == FNR { b = $2; next }
    { printf "jaeger: %.1f CPU seconds over the traced run (%d s)\n", ($2 - b) / hz, s }' "$work/j.before" "$work/j.after"
done
