# cqlcontrol — developer entry points. `make test` is what CI runs (through .ci/run).
GO ?= go
PKGS ?= ./...
BENCHTIME ?= 1s

.PHONY: test race vet gocqlv2 lint bench long demo sim image clean

# The test command from the README: vet, then every test with the race detector, in both modules.
test: vet race gocqlv2

vet:
	$(GO) vet $(PKGS)

race:
	TESTCONTAINERS_RYUK_DISABLED=true $(GO) test -race -count=1 -timeout 30m $(PKGS)

# The gocqlv2 module (apache gocql v2) has its own go.mod, so ./... above does not reach it.
gocqlv2:
	cd gocqlv2 && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 30m ./...

# The long integration cases (ten 60 s outages of the governed process: about 11 minutes).
long:
	CQLCONTROL_LONG=1 $(GO) test -race -count=1 -timeout 30m -run 'TestGovernedLongOutages' -v ./integration/

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./reconnect/ ./hostevents/ ./metadata/ ./controlconn/

demo:
	$(GO) run ./cmd/cqlcontrol demo

sim:
	$(GO) run ./cmd/cqlcontrol sim

# The container image (Dockerfile): the static binary is built here, then copied into a FROM scratch
# image, so nothing is pulled. IMAGE=name:tag overrides the tag.
image:
	mkdir -p bin/image
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/image/cqlcontrol ./cmd/cqlcontrol
	docker build -t $(or $(IMAGE),cqlcontrol-sim:latest) -f Dockerfile bin/image

clean:
	rm -rf bin
