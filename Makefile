# Gregor's build and test entry points. `make test` installs what the tests
# need (Go modules; each compat client family via compat/mk/*.mk), builds the binary, vets, runs every
# test under the race detector and a short fuzzing pass.
GO      ?= go
BIN     := bin/gregor

.PHONY: all build test deps vet unit compat compat-deps fuzz clean bench chaos

# Each client family of the compatibility suite installs what it needs in
# its own fragment (compat/mk/*.mk), adding its target to COMPAT_DEPS.
COMPAT_DEPS :=
include $(wildcard compat/mk/*.mk)

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gregor

# The TLS tests make keys with openssl and stores with the JDK's keytool.
deps:
	@command -v openssl >/dev/null 2>&1 || { echo "installing openssl"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl; }
	$(GO) mod download
	cd bench && $(GO) mod download

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# The benchmark harness's own unit tests (parsing, reporting) run here;
# the benchmark itself only under `make bench`. The allocation counts of
# the data path are exact only without the race detector: those tests run
# once more without it.
unit: build
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/compat$$')
	$(GO) test -count=1 -run 'Allocat' ./protocol ./broker
	cd bench && $(GO) test -count=1 ./...

compat-deps: $(COMPAT_DEPS)

# Real clients of every ecosystem against the real binary; writes COMPAT.md.
compat: build deps compat-deps
	GREGOR_COMPAT_MD=$(CURDIR)/COMPAT.md $(GO) test -count=1 -timeout 40m ./compat/

# Short fuzzing of the decoders that see untrusted bytes, about 10 s a target
# here. The budgets count executions rather than time: with a -fuzztime
# duration, Go 1.26's fuzzing coordinator can report its own deadline as a
# failure ("context deadline exceeded", golang/go#75804) on a loaded machine.
# The logstore targets write segment files on every execution.
FUZZ_EXECS ?= 100000
FUZZ_FILE_EXECS ?= 10000
FUZZ_RUN = $(GO) test -run='^$$'
fuzz:
	$(FUZZ_RUN) -fuzz='^FuzzReadFrame$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzParseRequestHeader$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzDecodeReuse$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzValidateBatch$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzSplitBatches$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzDecompress$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzValidateStoredBatch$$' -fuzztime=$(FUZZ_EXECS)x ./protocol
	$(FUZZ_RUN) -fuzz='^FuzzServers$$' -fuzztime=$(FUZZ_EXECS)x ./sasl
	$(FUZZ_RUN) -fuzz='^FuzzDumpFiles$$' -fuzztime=$(FUZZ_FILE_EXECS)x ./logstore
	$(FUZZ_RUN) -fuzz='^FuzzAppendReplicated$$' -fuzztime=$(FUZZ_FILE_EXECS)x -fuzzminimizetime=10x ./logstore

test: deps vet unit compat fuzz

# A long random schedule of kills, pauses, restarts and network cuts,
# checked for lost, duplicated and reordered records, on three combined
# nodes and then on three controllers beside three brokers (`make test`
# runs 20 s of each). GREGOR_CHAOS_DURATION sets the length of each,
# GREGOR_CHAOS_LAYOUT=combined or dedicated runs one,
# GREGOR_CHAOS_MAX_FAULTY=2 lets it take the quorum down too,
# GREGOR_CHAOS_SEED replays a logged schedule.
chaos: build
	GREGOR_BINARY=$(CURDIR)/$(BIN) GREGOR_CHAOS_DURATION=$${GREGOR_CHAOS_DURATION:-10m} \
		$(GO) test -race -count=1 -timeout 60m -run '^TestChaos$$' -v ./cmd/gregor/clustertest/

# Gregor side by side with Apache Kafka and kfake; writes BENCH.md (about
# 25 minutes; BENCH_QUICK=1 for a short run). Not part of `make test`.
bench:
	@command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || { \
		echo "installing Java and Maven"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven; }
	cd bench && $(GO) run ./cmd/bench

clean:
	rm -rf bin
