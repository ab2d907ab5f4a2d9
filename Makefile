# Gregor's build and test entry points. `make test` installs what the tests
# need (Go modules, kcat from Debian), builds the binary, vets, runs every
# test under the race detector and a short fuzzing pass.
GO      ?= go
FUZZTIME ?= 10s
BIN     := bin/gregor

.PHONY: all build test deps vet unit fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gregor

# kcat (librdkafka's command-line client) is used by the compatibility tests.
deps:
	$(GO) mod download
	@command -v kcat >/dev/null 2>&1 || { \
		echo "installing kcat"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat; }

vet:
	$(GO) vet ./...

unit: build
	$(GO) test -race -count=1 -timeout 30m ./...

# Short fuzzing of the decoders that see untrusted bytes.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzReadFrame$$' -fuzztime=$(FUZZTIME) ./protocol
	$(GO) test -run='^$$' -fuzz='^FuzzParseRequestHeader$$' -fuzztime=$(FUZZTIME) ./protocol
	$(GO) test -run='^$$' -fuzz='^FuzzValidateBatch$$' -fuzztime=$(FUZZTIME) ./protocol
	$(GO) test -run='^$$' -fuzz='^FuzzSplitBatches$$' -fuzztime=$(FUZZTIME) ./protocol
	$(GO) test -run='^$$' -fuzz='^FuzzDecompress$$' -fuzztime=$(FUZZTIME) ./protocol

test: deps vet unit fuzz

clean:
	rm -rf bin
