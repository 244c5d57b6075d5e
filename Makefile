# paddock build, setup and test entry points.
GO ?= go
BIN := bin/paddock

.PHONY: build setup test proto bench bench-short lint fuzz web check-web

# GUEST_TAGS are the small guest's build tags (testenv.SmallGuestTags builds it the same
# way for the tests): grpcnotrace leaves out gRPC's request tracing, which the guest never
# turns on, and html/template with it.
GUEST_TAGS := grpcnotrace

# build makes paddock (the lean CLI front) and, beside it, paddock-full (every other
# command and the daemon) and the small guest the daemon copies into sandboxes.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/paddock
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/paddock-full ./cmd/paddock-full
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(GUEST_TAGS) -ldflags "-s -w" -o bin/paddock-guest ./cmd/paddock-guest

# setup installs what the tests need on a fresh Debian machine.
setup:
	./scripts/setup.sh

# test runs every test: scripts/test.sh brings up a Kubernetes cluster for the kubernetes
# backend's tests first (as root) and tears it down after, then runs
# CGO_ENABLED=0 go test -count=1 -timeout 40m $(TESTFLAGS) ./...
TESTFLAGS ?=
test:
	GO="$(GO)" ./scripts/test.sh $(TESTFLAGS)

# fuzz runs each fuzz target in turn for FUZZTIME (their seeds run in make test too).
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

# bench runs every benchmark 20 times, but the snapshot benchmark (a 200 MB workspace to
# MinIO) and the Vagrant ones (a machine made each time) 3 times, then prints one table of
# the figures docs/benchmarks.tsv tracks against their committed values (flagging any
# more than 25% worse, never failing on one). bench-short is CI's quick form.
bench:
	GO="$(GO)" ./scripts/bench.sh

bench-short:
	GO="$(GO)" ./scripts/bench.sh short

# proto regenerates the committed protobuf code (needs protoc from Debian's protobuf-compiler).
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I proto \
		--go_out=. --go_opt=module=github.com/paddockhq/paddock \
		--go-grpc_out=. --go-grpc_opt=module=github.com/paddockhq/paddock \
		proto/paddock/agent/v1/agent.proto

# web builds the web UI from web/ into internal/webui/dist, which the binary embeds and git
# keeps: run it after changing web/ and commit both (check-web checks they agree).
web:
	cd web && { [ -d node_modules ] || npm ci --ignore-scripts --no-audit --no-fund; } && npm run build

check-web:
	./scripts/check-web.sh

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...
