# ackcheck: see README.md.
GO ?= go
BIN := bin/ackcheck

.PHONY: build demo test test-short fuzz bench bench-peer vet fmt-check clean mutate

build:
	$(GO) build -o $(BIN) ./cmd/ackcheck

# A leader kill on a local 3-node Kafka in about a minute (see README.md).
# Without Java and Maven: make demo DEMOFLAGS=--embedded.
DEMOFLAGS ?=
demo: build
	./$(BIN) demo $(DEMOFLAGS)

# The test command README.md documents and .ci/run calls. Tests that need a
# real cluster skip themselves unless .ci/run (or you) set their variables.
# Two queues run side by side, each one package at a time (-p 1, because
# the real-cluster tests of a queue's packages kill, pause and restart the
# nodes of the same clusters): the packages that use the Kafka clusters
# (cmd/ackcheck, deploy/kubernetes, drivers/kafka: about 33 minutes of
# CI's 60) and every other package (NATS, Pulsar, Queen, the in-process
# tests: about 27). No cluster, port or namespace is used by both queues,
# so CI's tests take the longer queue's time, not the sum. Each queue
# writes its own log in TESTLOGS (streamed here with tail's "==> file <=="
# headers), ending with how long the queue took; make test fails when
# either queue fails.
# -timeout 50m per package: each broker's truth tests run in its own
# package (drivers/<broker>), and drivers/kafka holds Kafka's (leader
# kills, fsync audit, unclean election, netns partitions, SSH: the
# scenarios package took 23.4 min in one run on a loaded machine, load
# average 8-11, most of it Kafka's; the SSH tests' loads, which moved
# from cmd/ackcheck, last about 6.5 min more).
TESTFLAGS ?=
TESTLOGS ?= bin/test
KAFKA_QUEUE := ./cmd/... ./deploy/... ./drivers/kafka/...
test:
	@mkdir -p $(TESTLOGS); : >$(TESTLOGS)/kafka.log; : >$(TESTLOGS)/rest.log; \
	rest=$$($(GO) list ./... | grep -v -e '/cmd/' -e '/deploy/' -e '/drivers/kafka$$') || exit 1; \
	s=$$(date +%s); \
	( $(GO) test -p 1 -count=1 -timeout 50m $(TESTFLAGS) $(KAFKA_QUEUE); c=$$?; echo "make test: Kafka queue took $$(( $$(date +%s) - s )) s"; exit $$c ) >$(TESTLOGS)/kafka.log 2>&1 & k=$$!; \
	( $(GO) test -p 1 -count=1 -timeout 50m $(TESTFLAGS) $$rest; c=$$?; echo "make test: other queue took $$(( $$(date +%s) - s )) s"; exit $$c ) >$(TESTLOGS)/rest.log 2>&1 & r=$$!; \
	tail -n +1 -f $(TESTLOGS)/kafka.log $(TESTLOGS)/rest.log & t=$$!; \
	trap 'kill $$k $$r 2>/dev/null' INT TERM; \
	wait $$k; ks=$$?; wait $$r; rs=$$?; sleep 1; kill $$t 2>/dev/null; \
	echo "make test: Kafka queue exit $$ks, other queue exit $$rs (logs: $(TESTLOGS)/kafka.log, $(TESTLOGS)/rest.log)"; \
	[ $$ks -eq 0 ] && [ $$rs -eq 0 ]

# Fuzz each parser and decoder of untrusted input for FUZZTIME; the corpus
# lives in each package's testdata/fuzz and runs as plain tests too. A
# count (5000x), not a duration: with a duration, go's fuzzer can end on
# "context deadline exceeded" when the time runs out mid-input, which
# failed CI once with no failing input.
FUZZTIME ?= 5000x
FUZZ_TARGETS := faults:FuzzParseSchedule faults:FuzzLoadClusterFile message:FuzzDecode message:FuzzEncoder ledger:FuzzDecodeFragment
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# Mutation testing of the verdict path (docs/testing.md): gremlins, pinned
# in go.mod as a tool, one package at a time, niced and with few workers
# (each mutant is a compile and link of the package's tests: about 5
# CPU-s). Results as JSON in bin/mutate/<pkg>.json. The verifier's check:
# make mutate MUTATE_PKGS=verifier MUTATE_FLAGS=--threshold-efficacy=85
# Never --test-cpu: gremlins 0.6.0 passes it as one argument "-cpu N",
# go test fails on it with exit 1 and every mutant reads KILLED. A
# mutant's time limit is the coverage run's time times the coefficient,
# and it includes the mutant's build: under load the default 3 timed out
# mutants that tests would have killed. -count=1: a cached coverage run
# would make that limit a second or two. -vet=off: go test's vet costs
# CPU per mutant, and a mutant that only upsets vet is not killed by a test.
# -failfast: a killed mutant stops at its first failing test (a lived one
# runs them all, so the counts do not change). MUTATE_SKIP: tests that fail
# on their own now and then (a fatal error inside Pebble on a full disk
# with NoSync; a timing bound that a loaded machine misses) would count a
# lived mutant as killed, so they are not run against mutants.
# MUTATE_TMP: the tests' temporary files; a tmpfs makes their fsyncs free.
MUTATE_PKGS ?= verifier ledger faults load
MUTATE_WORKERS ?= 2
MUTATE_TIMEOUT_COEFFICIENT ?= 10
MUTATE_FLAGS ?=
MUTATE_SKIP ?= TestDiskFillsUnderTheLedger/NoSync=true|TestFaultsFireOnTimeWhileANodeHangs
MUTATE_TMP ?= $(shell test -d /dev/shm && echo /dev/shm || echo /tmp)
mutate:
	@mkdir -p bin/mutate
	@for p in $(MUTATE_PKGS); do \
		echo "mutate ./$$p"; \
		TMPDIR="$(MUTATE_TMP)" GOFLAGS="$$GOFLAGS -count=1 -vet=off -failfast -skip=$(MUTATE_SKIP)" nice -n 15 $(GO) tool gremlins unleash --workers $(MUTATE_WORKERS) \
			--timeout-coefficient $(MUTATE_TIMEOUT_COEFFICIENT) \
			--output bin/mutate/$$p.json $(MUTATE_FLAGS) ./$$p || exit 1; \
	done

test-short:
	$(GO) test -count=1 -short ./...

# Speed and memory figures: go benchmarks, then the bench command (peak RSS
# of verification, measured in a separate process).
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x -cpu 1 ./ledger/ ./verifier/
	./$(BIN) bench

# ackcheck against bare franz-go doing the same work (see README.md,
# "Performance"): CPU per message, msg/s, peak RSS, as ratios.
bench-peer: build
	./$(BIN) bench --peer --repeat 5

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
