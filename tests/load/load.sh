#!/usr/bin/env bash
# Load run on loopback against a running service (make run, with
# FOODSAFE_RATE_LIMIT raised so the limiter does not answer 429s), using the
# demo key. Needs wrk (Debian package wrk). Usage: make load [DURATION=20s]
set -euo pipefail
API=${API:-http://127.0.0.1:8080}
DURATION=${DURATION:-20s}
CONNECTIONS=${CONNECTIONS:-16}
KEY=$(cat .data/demo-key)
TO=$(( $(date +%s) * 1000 )); FROM=$(( TO - 30 * 24 * 3600 * 1000 ))
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
run() {
  echo "== $1"
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $KEY" "$API$2" \
    | grep -E "Requests/sec|Latency +[0-9]|50%|90%|99%|Non-2xx"
}
run "restaurants (auth only)" "/v1/restaurants"
run "deliveries, last 30 days, 50 per page" "/v1/restaurants/demo-bistro/deliveries?from=$FROM&to=$TO&limit=50"
run "walk page, 50 temperature records" "/v1/restaurants/demo-bistro/collections/temperature-records/records?limit=50"
run "single record" "/v1/restaurants/demo-bistro/collections/areas/records/area-1"
