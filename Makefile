# paddock build, setup and test entry points.
GO ?= go
BIN := bin/paddock

.PHONY: build setup test test-quick proto bench bench-short lint fuzz web check-web

# build makes paddock (the lean CLI front) and, beside it, paddock-full (every other
# command and the daemon) and the small guest the daemon copies into sandboxes.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/paddock
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/paddock-full ./cmd/paddock-full
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/paddock-guest ./cmd/paddock-guest

# setup installs what the tests need on a fresh Debian machine.
setup:
	./scripts/setup.sh

# test runs every test (docs/testing.md): scripts/test.sh brings up a Kubernetes cluster
# for the kubernetes backend's tests in the background (as root) while the rest start, runs
# the heavy packages beside the others, the packages that need nothing make setup installs
# with Go's test cache, and tears the cluster down after. Every test's duration goes to
# test-durations.txt; the slowest 20 are printed at the end.
TESTFLAGS ?=
test:
	GO="$(GO)" ./scripts/test.sh $(TESTFLAGS)

# test-quick is the inner loop: every test but microVMs, the cluster, Vagrant and
# Chromium (go test -short).
test-quick:
	GO="$(GO)" ./scripts/test.sh --quick $(TESTFLAGS)

# fuzz runs each fuzz target in turn for FUZZTIME (their seeds run in make test too).
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

# bench runs every benchmark 20 times, but the snapshot benchmark (a 200 MB workspace to
# MinIO) and the Vagrant ones (a machine made each time) 3 times and the tasks' 5 times
# (agents at work for seconds), then prints one table of
# the figures docs/benchmarks.tsv tracks against their committed values (flagging any
# more than 25% worse, never failing on one). bench-short is CI's quick form.
bench:
	GO="$(GO)" ./scripts/bench.sh

bench-short:
	GO="$(GO)" ./scripts/bench.sh short

# proto regenerates the committed protobuf code (needs protoc from Debian's protobuf-compiler):
# messages by protoc-gen-go-lite (marshalling written out, no reflection: the guest links no
# protobuf runtime), services by protoc-gen-go-drpc, which encodes through guestproto.
proto:
	$(GO) install github.com/aperturerobotics/protobuf-go-lite/cmd/protoc-gen-go-lite@v0.14.0
	$(GO) install storj.io/drpc/cmd/protoc-gen-go-drpc@v1.0.0
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I proto \
		--go-lite_out=. --go-lite_opt=module=github.com/paddockhq/paddock \
		--go-lite_opt=features=marshal+unmarshal+size \
		--go-drpc_out=. --go-drpc_opt=module=github.com/paddockhq/paddock \
		--go-drpc_opt=protolib=github.com/paddockhq/paddock/internal/guestproto --go-drpc_opt=json=false \
		proto/paddock/guest/v1/guest.proto
	sed -i '1a //lint:file-ignore SA4006 generated: the unmarshal code advances an index it does not read again (make proto adds this line)' \
		internal/guestproto/guestpb/guest.pb.go

# web builds the web UI from web/ into internal/webui/dist, which the binary embeds and git
# keeps: run it after changing web/ and commit both (check-web checks they agree).
web:
	cd web && { [ -d node_modules ] || npm ci --ignore-scripts --no-audit --no-fund; } && npm run build

check-web:
	./scripts/check-web.sh

# STATICCHECK is the version scripts/setup.sh installs.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...
	@[ -x "$(STATICCHECK)" ] || { echo "lint: $(STATICCHECK) is missing: run make setup"; exit 1; }
	$(STATICCHECK) ./...
