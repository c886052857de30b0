# One entry point for humans and CI. `make run` and `make test` are the two
# commands README promises work on a fresh machine.
SHELL        := /bin/bash
GO           ?= go
PKG          := github.com/foodsafe/foodsafe
SQLC_VERSION := v1.31.1
# staticcheck and deadcode, pinned like sqlc (make lint).
STATICCHECK_VERSION := v0.8.2
DEADCODE_VERSION    := v0.52.0
# gocyclo, pinned like them (make cyclo).
GOCYCLO_VERSION     := v0.6.0
# gotestsum runs make test: it lists skipped tests with their reasons.
GOTESTSUM_VERSION   := v1.13.0
# sqlc is pinned and built from source without cgo (no system libraries).
SQLC         := CGO_ENABLED=0 $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@$(SQLC_VERSION)
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/foodsafe?sslmode=disable
VERSION      ?= dev
COMMIT       := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS      := -X $(PKG)/internal/version.Version=$(VERSION) -X $(PKG)/internal/version.Commit=$(COMMIT)
BIN          := bin/foodsafe

export DATABASE_URL

.PHONY: build image run migrate test test-citus chaos bench bench-first-sync bench-http bench-traces bench-migrate-data bench-scale compare-walk load load-hostile fuzz generate check-generated docs check-docs check-links vet lint cyclo lint-openapi check-clients clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/foodsafe
	$(GO) build -o bin/foodsafe-sync ./cmd/foodsafe-sync

## image: a minimal OCI image IMAGE (default foodsafe:VERSION) holding
## static builds of foodsafe (the entrypoint) and foodsafe-sync, CA
## certificates and time-zone data from this host, run as user 65532
## (deploy/image/Dockerfile; docs/operators.md, "Container image"). Needs docker.
IMAGE        ?= foodsafe:$(VERSION)
IMAGE_DIR    := .artifacts/image
image:
	rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)/bin $(IMAGE_DIR)/etc/ssl/certs $(IMAGE_DIR)/data/blobs
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_DIR)/bin/foodsafe ./cmd/foodsafe
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_DIR)/bin/foodsafe-sync ./cmd/foodsafe-sync
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_DIR)/etc/ssl/certs/
	cp -rL /usr/share/zoneinfo $(IMAGE_DIR)/zoneinfo
	printf 'root:x:0:0:root:/:/sbin/nologin\nfoodsafe:x:65532:65532:foodsafe:/data:/sbin/nologin\n' > $(IMAGE_DIR)/etc/passwd
	printf 'root:x:0:\nfoodsafe:x:65532:\n' > $(IMAGE_DIR)/etc/group
	docker build -q -f deploy/image/Dockerfile -t $(IMAGE) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
		--build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) $(IMAGE_DIR)
	@docker image inspect $(IMAGE) --format 'built $(IMAGE): {{.Size}} bytes, user {{.Config.User}}'

## DATA is where `make run` keeps its state: the demo key and the
## development cursor and URL keys (uploaded files go to FOODSAFE_BLOB_DIR,
## .data/blobs by default).
DATA         ?= .data
DEMO_KEY     := $(DATA)/demo-key
DEV_KEYS     := $(DATA)/cursor-key $(DATA)/url-key

## RUN_PORT is the port make run serves on, on loopback: a development
## server is not exposed unless FOODSAFE_ADDR says so (FOODSAFE_ADDR=:8080
## serves on every interface).
RUN_PORT     ?= 8080

## run: create the database if missing, migrate, load the demo restaurant on
## first start (its key is kept in $(DATA)/demo-key, readable by the owner
## only), serve on FOODSAFE_ADDR, else 127.0.0.1:$(RUN_PORT), with
## FOODSAFE_BASE_URL, unless set, the address it serves on (left unset for
## a wildcard address or port 0: each connection's own address then).
## FOODSAFE_CURSOR_KEY and FOODSAFE_URL_KEY come from the environment, else
## from $(DATA)/cursor-key and $(DATA)/url-key (made once), so changes
## cursors and signed URLs survive a restart.
run: build $(DEV_KEYS)
	$(DEV_ENV) $(BIN) migrate --create-database
	@# The kept key must be an active key of this database (DATABASE_URL may
	@# have changed, or the database been dropped); otherwise load the demo
	@# (once per database) and keep its new key.
	@pub=$$(sed -nE 's/^fsk_([a-z0-9]+)\..*/\1/p' $(DEMO_KEY) 2>/dev/null); \
	if [ -z "$$pub" ] || ! $(DEV_ENV) $(BIN) keys list --json | tr -d ' \n' | grep -q "\"publicId\":\"$$pub\",[^}]*\"state\":\"active\""; then \
		mkdir -p $(DATA) && (umask 077 && $(DEV_ENV) $(BIN) demo > $(DEMO_KEY).tmp) && mv $(DEMO_KEY).tmp $(DEMO_KEY); \
	fi
	@chmod 600 $(DEMO_KEY) # a key kept before it was made private
	@echo "demo key (kept in $(DEMO_KEY)): $$(cat $(DEMO_KEY))"
	@addr="$${FOODSAFE_ADDR:-127.0.0.1:$(RUN_PORT)}"; host="$${addr%:*}"; port="$${addr##*:}"; \
	if [ -z "$${FOODSAFE_BASE_URL:-}" ] && [ "$$port" != 0 ]; then \
		case "$$host" in ""|0.0.0.0|"[::]") ;; *) export FOODSAFE_BASE_URL="http://$$host:$$port" ;; esac; \
	fi; \
	FOODSAFE_ADDR="$$addr" $(DEV_ENV) exec $(BIN) serve

# Every command of make run gets the same signing keys, so none of them
# warns that they are unset.
DEV_ENV = FOODSAFE_CURSOR_KEY="$${FOODSAFE_CURSOR_KEY:-$$(cat $(DATA)/cursor-key)}" \
	FOODSAFE_URL_KEY="$${FOODSAFE_URL_KEY:-$$(cat $(DATA)/url-key)}"

# A development signing key: 32 random bytes, base64 (43 characters), kept
# readable by the owner only. Never used when the variable is set.
$(DEV_KEYS):
	@mkdir -p $(DATA)
	@umask 077 && head -c 32 /dev/urandom | base64 | tr -d '=\n' > $@.tmp && mv $@.tmp $@

migrate: build
	$(BIN) migrate --create-database

## test: every test, against a real PostgreSQL, Redis and S3 server (see
## docs/contributors.md, "Tests"); the first run also builds the S3 server
## (versitygw) into the user's cache directory, which takes a few minutes.
## gotestsum (pinned) prints one line per package, then every skipped test
## with the reason it gives (what would run it), then every failure with its
## output; the exit status is go test's.
test:
	$(GO) run gotest.tools/gotestsum@$(GOTESTSUM_VERSION) --format pkgname --format-hide-empty-pkg \
		--raw-command -- $(GO) test -json -race -count=1 -timeout 20m ./...

## test-citus: the integration suite against a Citus cluster: every test
## database is created on the coordinator CITUS_DATABASE_URL and on the
## workers CITUS_WORKERS (host:port,...), which are added to it, and
## migrated (docs/contributors.md, "Citus"). Not part of `make test` or CI.
test-citus:
	@test -n "$$CITUS_DATABASE_URL" -a -n "$$CITUS_WORKERS" || { echo "set CITUS_DATABASE_URL (coordinator admin URL) and CITUS_WORKERS (host:port,...)"; exit 2; }
	$(GO) test -count=1 -timeout 40m ./tests

## chaos: the connection-loss test of make test at length (CHAOS_KILLS cuts
## of every database connection under load, each way; default 500).
CHAOS_KILLS ?= 500
chaos:
	FOODSAFE_CHAOS_KILLS=$(CHAOS_KILLS) $(GO) test -race -count=1 -timeout 30m -run '^TestConnectionLossIsNever500$$' -v ./tests

## bench: the hot-path plan checks at 1,000,000 rows, then the big-data
## benchmarks (BenchmarkSync included: foodsafe-sync over 100,000 records);
## not part of `make test`.
bench:
	FOODSAFE_PLAN_ROWS=1000000 $(GO) test -count=1 -run '^TestHotPathPlans$$' -timeout 30m ./tests
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

## bench-first-sync: foodsafe-sync's first sync of a key of 2,000
## restaurants x 25 streams through the key-wide feed, its requests counted
## at the server (FOODSAFE_FIRST_SYNC_BENCH_RESTAURANTS; goal <= 1,500).
bench-first-sync:
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkSyncFirstOfLargeKey$$' -benchtime 1x -timeout 30m ./tests

## fuzz: run each fuzzer for FUZZTIME (default 60s); their seeds run in make test.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzBodies$$' -fuzztime $(FUZZTIME) ./internal/validate
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReadsOnce$$' -fuzztime $(FUZZTIME) ./internal/validate
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./internal/cursor
	$(GO) test -run '^$$' -fuzz '^FuzzParseMillis$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME) ./internal/ids
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalDocument$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSONIsEncodingJSON$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzIsNumber$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzCompacted$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzRestaurantListIsEncodingJSON$$' -fuzztime $(FUZZTIME) ./internal/wire
	TEST_DATABASE_URL=$${TEST_DATABASE_URL:?the signed-cursor fuzz target needs PostgreSQL} $(GO) test -run '^$$' -fuzz '^FuzzSignedCursors$$' -fuzztime $(FUZZTIME) ./tests
	TEST_DATABASE_URL=$${TEST_DATABASE_URL:?the temperature-records fuzz target needs PostgreSQL} $(GO) test -run '^$$' -fuzz '^FuzzTemperatureRecordsDecode$$' -fuzztime $(FUZZTIME) ./internal/store

## load: wrk on loopback against two servers started on the `make run`
## database, metrics on and off, in turn (DURATION per run, default 10s);
## prints req/s and p99 of each and checks the metrics against wrk. Needs wrk.
load: build
	tests/load/load.sh

## load-hostile: one hostile attack after another against one serve on
## loopback (stalled uploads and MCP batches, downloads of HTTP-looking
## files, a /health/version flood, hostile JSON bodies, slow bodies, random
## keys, ambiguous framing, an idle connection), each with serve's RSS,
## health latency and database round trips; about a minute; fails when an
## attack breaks its bound (tests/load/hostile.sh; UPLOADS, BATCHES, CALLS).
load-hostile: build
	$(GO) build -o bin/load-hostile ./tests/load/hostile
	UPLOADS=$(UPLOADS) BATCHES=$(BATCHES) CALLS=$(CALLS) tests/load/hostile.sh

## bench-http: the service under wrk against the same statements under
## pgbench -M prepared, in one run, with both ratios (tests/load/bench-http.sh;
## DURATION per run, default 10s).
bench-http: build
	$(GO) build -o bin/bench-bare ./tests/load/bare
	tests/load/bench-http.sh

## bench-traces: what tracing costs a request: bench-http's rows
## (BENCH_ROWS, default "first single new") with tracing off, with an older
## binary OLD when given, and with every request traced and exported to
## Jaeger all-in-one (bin/jaeger, built from tests/tools/jaeger), ROUNDS
## times (default 2) (tests/load/bench-traces.sh).
bench-traces: build
	$(GO) build -o bin/bench-bare ./tests/load/bare
	cd tests/tools/jaeger && $(GO) build -trimpath -o ../../../bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
	OLD=$(OLD) ROUNDS=$(ROUNDS) tests/load/bench-traces.sh

## bench-scale: what a key costs by how much it holds (keys of SIZES
## restaurants x 25 read scopes, default 200,2000,20000: create, first
## request, full GET /v1/changes listing, poll, MCP, /v1/restaurants in each
## coding) and a walk page by table size (WALK_SIZES records, default
## 100000,1000000; add 10000000 for the 10^7 point, which takes long)
## and the records feed over FEED_RESTAURANTS production-shaped
## restaurants (default 20000: page p50, p90, max) and a first sync of it
## by SYNC_BIN (default bin/foodsafe-sync) into each of SYNC_TARGETS
## (default sqlite,postgres) under the default deadline,
## against `foodsafe serve` on a database SCALE_DB (default foodsafe_scale)
## it creates on DATABASE_URL's server (tests/load/scale; SIZES=none
## WALK_SIZES=none: the feed's rows alone). Not part of make test.
bench-scale: build
	$(GO) build -o bin/bench-scale ./tests/load/scale
	bin/bench-scale

## bench-migrate-data: the cost of a data migration per million rows
## (tests/load/migrate-data.sh): MIGRATION=00013 (default; data from jsonb
## to json) and 00019 (a delivery's temperature records from jsonb to
## json) as a migration and online, 00020 (integer fields in plain form).
bench-migrate-data: build
	ROWS=$(ROWS) MIGRATION=$(MIGRATION) tests/load/migrate-data.sh

## compare-walk: a walk page and its data statement on an older binary
## (OLD=path) and this one, alternating (tests/load/compare-walk.sh).
compare-walk: build
	OLD=$(OLD) ROUNDS=$(ROUNDS) DURATION=$(DURATION) tests/load/compare-walk.sh

## generate: regenerate internal/store/internal/db from sql/ with the pinned sqlc.
generate:
	$(SQLC) generate

## check-generated: fail when internal/store/internal/db is stale against sql/.
check-generated:
	$(SQLC) diff

## docs: regenerate the reference pages (docs/reference) from the code:
## configuration, both command lines, problem types, metrics, MCP tools.
## Each binary's hidden `docs gen DIR` writes them (the command trees live
## in the binaries).
DOCS_GEN = $(GO) run ./cmd/foodsafe docs gen $(1) && $(GO) run ./cmd/foodsafe-sync docs gen $(1)
docs:
	rm -rf docs/reference
	$(call DOCS_GEN,docs/reference)

## check-docs: fail when a committed reference page differs from what the
## code generates (a page added, changed or gone).
check-docs:
	@tmp=$$(mktemp -d) && $(call DOCS_GEN,$$tmp) && diff -ru docs/reference $$tmp; \
		status=$$?; rm -rf $$tmp; \
		if [ $$status -ne 0 ]; then echo "docs/reference is stale: run make docs and commit the pages"; fi; exit $$status

## check-links: every relative link and anchor in README.md and docs/
## resolves (offline).
check-links:
	$(GO) test -count=1 -run '^TestRepoLinks$$' ./internal/linkcheck

vet:
	$(GO) vet ./...

## lint: staticcheck and deadcode (tests count as callers), pinned.
lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@# deadcode exits 0 with findings; any output fails the target.
	@out=$$($(GO) run golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION) -test ./...) || exit 1; \
		if [ -n "$$out" ]; then echo "$$out"; exit 1; fi

## cyclo: no hand-written function above cyclomatic complexity 20
## (gocyclo, pinned): every tracked Go file but tests and generated code
## (a file whose header says "Code generated ... DO NOT EDIT.").
cyclo:
	@files=$$(git ls-files '*.go' ':!:*_test.go' | xargs grep -L '^// Code generated .* DO NOT EDIT\.$$') && \
		$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@$(GOCYCLO_VERSION) -over 20 $$files

## lint-openapi: lint the generated OpenAPI document with spectral and
## Redocly CLI (both pinned in .ci/package-lock.json; any warning fails),
## validate it with openapi-spec-validator (Python; a second validator,
## which .ci/run installs when missing) and compile every pattern of it
## with Python's re, a second regular-expression engine (.ci/patterns.py).
lint-openapi:
	npm ci --prefix .ci --no-audit --no-fund --silent
	tmp=$$(mktemp -d) && $(GO) run ./cmd/foodsafe openapi > $$tmp/openapi.json && \
		.ci/node_modules/.bin/spectral lint $$tmp/openapi.json --ruleset .ci/spectral.yaml --fail-severity warn && \
		REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		.ci/node_modules/.bin/redocly lint $$tmp/openapi.json --config .ci/redocly.yaml --max-problems 50 && \
		python3 -m openapi_spec_validator $$tmp/openapi.json && \
		python3 .ci/patterns.py $$tmp/openapi.json; \
		status=$$?; rm -rf $$tmp; exit $$status

## check-clients: generate the clients partners generate from the served
## document (openapi-typescript for TypeScript, oapi-codegen for Go) and
## compile a small typed program against each (.ci/clients): fails when
## record data stops being typed or numbers stop being doubles.
OAPI_CODEGEN := $(GO) run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
check-clients:
	npm ci --prefix .ci --no-audit --no-fund --silent
	tmp=$$(mktemp -d) && $(GO) run ./cmd/foodsafe openapi > $$tmp/openapi.json && \
		.ci/node_modules/.bin/openapi-typescript $$tmp/openapi.json -o .ci/clients/ts/openapi.d.ts --silent && \
		.ci/node_modules/.bin/tsc -p .ci/clients/ts/tsconfig.json && \
		mkdir -p .ci/clients/go/client && \
		(cd .ci/clients/go && $(OAPI_CODEGEN) -generate types,client -package client $$tmp/openapi.json > client/client.go && \
		 $(GO) build -o /dev/null .); \
		status=$$?; rm -rf $$tmp; exit $$status

## clean: remove the binary and local state (uploaded files, the demo key,
## the development signing keys).
clean:
	rm -rf bin $(DATA)
