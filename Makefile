# cqlcontrol — developer entry points. `make test` is what CI runs (through .ci/run).
GO ?= go
PKGS ?= ./...
BENCHTIME ?= 1s

.PHONY: test race allocs vet gocqlv2 consumer lint bench fuzz soak long real tls chaos traces peers containers fleet demo sim image clean

# The test command from the README: vet, then every test with the race detector, then the
# allocation tests again without it (the race detector's instrumentation allocates, so they
# skip themselves under -race), then the same for the gocqlv2 module.
test: vet race allocs gocqlv2

vet:
	$(GO) vet $(PKGS)

race:
	CQLCONTROL_LONG= TESTCONTAINERS_RYUK_DISABLED=true $(GO) test -race -count=1 -timeout 30m $(PKGS)

allocs:
	$(GO) test -count=1 -run 'DoesNotAllocate|AllocatesNothing' ./reconnect/ ./hostevents/ ./core/ ./internal/gocqlv1/

# The gocqlv2 module (apache gocql v2) has its own go.mod, so ./... above does not reach it.
gocqlv2:
	cd gocqlv2 && $(GO) vet ./... && CQLCONTROL_LONG= $(GO) test -race -count=1 -timeout 30m ./...

# gocqlv2 as a user gets it: a throwaway module outside the tree imports it and calls
# gocqlv2.New, with workspaces off and gocqlv2's replace ignored, the two modules of this checkout
# served by a file-based module proxy (internal/testkit/modproxy) at the version gocqlv2/go.mod requires,
# the rest from the configured proxy. About 10 s with a warm proxy cache.
consumer:
	bash .ci/consumer

# The long cases, which make test skips (each says why): real-time repeats on real sockets of
# figures that virtual-time tests pin in the regular suite, and outages of a minute or more.
# About 17 minutes on two cores, 10 of them the ten 60 s governed outages, then make chaos's
# 3-minute form (real Cassandra; about 4 minutes with the cluster's start): it is here, not in
# make real, because .ci/run is near its 30-minute budget. .ci/run runs make long after make
# test when CQLCONTROL_LONG=1 is set (a nightly or pre-release job), not on every change.
LONG_TESTS = TestGovernedLongOutages|TestGovernedPartialReturn|TestGovernedSixtySecondOutage|TestGovernedFullOutageSevenNodes|TestGovernedFullOutageTwelveNodes|TestBlindShortOutages|TestBlindDialsDoNotGrowWithNodesRealSockets|TestFullRestartsAndLongOutageWithGocqlSessionAttached
LONG_TESTS_V2 = TestFullRestartsAndLongOutageWithV2SessionAttached
long:
	CQLCONTROL_LONG=1 TESTCONTAINERS_RYUK_DISABLED=true $(GO) test -race -count=1 -timeout 60m -v -run '^($(LONG_TESTS))$$' ./integration/
	cd gocqlv2 && CQLCONTROL_LONG=1 $(GO) test -race -count=1 -timeout 30m -v -run '^($(LONG_TESTS_V2))$$' ./...
	$(MAKE) tls
	$(MAKE) chaos CHAOS=3m

# The real-Cassandra suites: Apache Cassandra 5.0 resolved with Maven into the user's cache
# (realcluster), 3 JVMs on 127.0.0.1-3, the restart contracts with gocql v1.7.0 and v2.1.2 and
# cqlsim held to the recorded traces. Needs java (17) and mvn; skips, saying so, without them.
# The live traces check (TestRealConformance, about 5 minutes: the committed traces in
# cqlsim/testdata/cassandra-5.0 still describe this Cassandra; CQLCONTROL_RECORD=1 rewrites them)
# runs in `make traces`, not here: the default suite holds cqlsim to the committed traces.
# integration/real's TestContainer* (the same contracts on Cassandra in containers) run in
# `make containers`. The full restarts under TLS (TestTLS, TestRealV2TLS: about 7 minutes
# together) run in `make tls`, which make long runs: with them and the container restarts,
# .ci/run took over 40 minutes on two cores.
real:
	CQLCONTROL_REAL=1 $(GO) test -p 1 -count=1 -timeout 40m -v -skip 'TestRealConformance|TestContainer|TestTLS' ./realcluster/ ./integration/real/
	cd gocqlv2 && CQLCONTROL_REAL=1 $(GO) test -count=1 -timeout 20m -v -run 'Real' -skip 'TestRealV2TLS' ./...
	cd bench/fleet && CQLCONTROL_REAL=1 $(GO) test -count=1 -timeout 10m -v ./...

# The TLS restarts on real Cassandra (docs/real-cassandra.md): v1 (server TLS, mutual TLS,
# host name verification, bad certificates, rotation) and gocql v2 under mutual TLS.
tls:
	CQLCONTROL_REAL=1 $(GO) test -count=1 -timeout 30m -v -run '^TestTLS$$' ./integration/real/
	cd gocqlv2 && CQLCONTROL_REAL=1 $(GO) test -count=1 -timeout 20m -v -run '^TestRealV2TLS$$' ./...

# The chaos schedule (integration/real TestChaos): 3 real Cassandra 5.0.8 nodes on
# 127.0.0.141-143 and a governed gocql process with a subscriber, through a seeded random
# schedule of overlapping faults (SIGKILL, SIGTERM, SIGSTOP/SIGCONT, nodetool
# disablebinary/enablebinary, a rolling restart, one node's native port blackholed by an
# nftables table of the test's own) for CHAOS; the seed is printed, CHAOS_SEED=n replays its
# schedule. Needs java (17), mvn and, for the blackhole, nft and root (installed from Debian's
# packages when missing, as make peers does). CHAOS_TIMEOUT bounds the test binary (raise it for
# runs of more than half an hour).
CHAOS ?= 3m
CHAOS_TIMEOUT ?= 60m
chaos:
	@command -v nft >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables; }
	CQLCONTROL_REAL=1 CHAOS=$(CHAOS) CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -timeout $(CHAOS_TIMEOUT) -v -run '^TestChaos$$' ./integration/real/

traces:
	CQLCONTROL_REAL=1 $(GO) test -count=1 -timeout 20m -v -run 'TestRealConformance' ./realcluster/

# Side by side with the other drivers (docs/peers.md): each lane of bench/peers alone (gocql v1,
# gocql v2, cqlcontrol ungoverned, governed, governed on v2, Java driver 4, scylla-rust, the
# Python driver and scylla-driver, Node.js) through full-cluster stops of 20 s and 60 s on real
# Cassandra 5.0.8 (3 JVMs on 127.0.0.41-43) and on cqlsim, SYNs counted by nftables. Writes
# bench/peers/results.json, bench/peers/peers.png/.svg and the table in BENCHMARKS.md. Each
# driver is installed under $(PEERS_CACHE) by the lane's own files (Cargo.lock, pom.xml,
# requirements*.txt, package-lock.json); a lane whose toolchain is missing is reported missing.
# Needs root (nftables, the lanes' group ID). About 50 minutes on two cores. PEERS_FLAGS narrows
# a run (-lanes java,rust -clusters cqlsim -outages 5s; its rows replace those in results.json).
PEERS_CACHE ?= $(or $(CQLCONTROL_CACHE),$(HOME)/.cache/cqlcontrol)/peers
peers:
	@command -v nft >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables; }
	cd bench/peers && $(GO) run ./harness -cache $(PEERS_CACHE) $(PEERS_FLAGS)

# The container suite (integration/container*_test.go: cqlsim node containers built FROM scratch,
# on the host's network, each node on a loopback address of its own; realcluster/containers and
# integration/real's TestContainerRestarts: Cassandra 5.0.8 in containers, the restart contracts
# of make real through the Docker API) against a Docker API engine:
# the one `docker info` reaches, or else Podman, installed from Debian's packages, configured and
# served for the run, then stopped, every container removed (.ci/containers says what it does, as
# root). CONTAINER_TESTS=pattern narrows the run.
containers:
	bash .ci/containers

# A fleet's return (docs/fleet.md): K independent clients (each its own gocql Session, and in
# the cqlcontrol lanes its own ControlConnection and governor) over worker processes of
# GOMAXPROCS=1, on one real Cassandra 5.0.8 node (127.0.0.111) with PasswordAuthenticator, the
# fleet's role at bcrypt cost 10 then 12, through SIGKILL + restart and 30 s of nodetool
# disablebinary. Writes bench/fleet/results.json (rows of a rerun replace the same rows), draws
# bench/fleet/fleet.png and .svg from it (go run . -chart redraws them alone) and prints the table
# for BENCHMARKS.md. Needs java (17) and mvn, as make real, and root for the SYN counts
# (nftables, installed from Debian's package here, and the workers' group ID); without them
# the run counts no SYNs and says so. About 40 minutes on two cores with the defaults;
# FLEET_FLAGS narrows or widens a run (-k 100 -costs 10 -lanes gocql; -lanes java adds the Java
# driver 4, its jars fetched by Maven into the cache the first time).
FLEET_FLAGS ?= -k 100,300 -costs 10,12
fleet:
	@command -v nft >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables; } || true
	cd bench/fleet && $(GO) run . -out results.json $(FLEET_FLAGS)

# golangci-lint at a pinned version, built from the module proxy on first use (cached after);
# .golangci.yml says which linters and why any finding kind is left out.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GOLANGCI_LINT) run ./...
	cd gocqlv2 && $(GOLANGCI_LINT) run --config ../.golangci.yml ./...
	cd bench/peers && $(GO) vet ./... && $(GOLANGCI_LINT) run --config ../../.golangci.yml ./...
	cd bench/fleet && $(GO) vet ./... && $(GOLANGCI_LINT) run --config ../../.golangci.yml ./...

# Fuzz each target for FUZZTIME (the regular tests replay the committed corpus under
# testdata/fuzz; a failing input the fuzzer finds is written there too).
FUZZTIME ?= 10s
FUZZ_TARGETS = ./internal/wire:FuzzReadFrame ./internal/wire:FuzzDecodeEvent ./metadata:FuzzReadTablesPeerRow
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg || exit 1; \
	done

# The long soak: 100 full restarts with gocql attached, 100 seeded random faults on 5 nodes
# (CQLCONTROL_SEED=n replays a run), a 10 s host-event flood about 20,000 hosts. The regular
# suite runs the same tests short.
soak:
	CQLCONTROL_SOAK=long CQLCONTROL_FLOOD=10s $(GO) test -race -count=1 -timeout 30m -v \
		-run 'TestSoakRestarts|TestRandomFaults|TestCloseIsPromptDuringHostEventFlood' ./integration/ ./core/

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./reconnect/ ./hostevents/ ./metadata/ ./core/ ./internal/gocqlv1/ ./internal/cqlconn/ ./internal/dialgate/

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
