# Sourced by the load scripts. serve_api_addr PID LOG prints the API
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
