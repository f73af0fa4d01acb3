package main

import (
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// bench --peer runs its seven workloads, each in a child, against its own
// kfake, two rounds, and prints for each a CPU figure, a rate and a peak
// RSS, then the ratios of the rounds (ackcheck's read-back child fails the
// benchmark unless the verdict is PASS, so every message written was read
// back and checked).
func TestBenchPeerSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six child processes against kfake, two rounds")
	}
	out, err := exec.Command(binary(t), "bench", "--peer", "--repeat", "2", "--messages", "20000", "--rate", "20000",
		"--dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("bench --peer: %v\n%s", err, out)
	}
	text := string(out)
	workload := regexp.MustCompile(`(?m)^  (\S+) +([0-9.]+) CPU-s per 1M +([0-9]+) msg/s +peak RSS +([0-9.]+) MiB +steal +([0-9.]+)%(?:  lag p99 [0-9.]+ ms(?:, shed [0-9]+)?)?  load [0-9.]+$`)
	seen := map[string]int{}
	for _, m := range workload.FindAllStringSubmatch(text, -1) {
		seen[m[1]]++
		for _, v := range m[2:5] {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f <= 0 {
				t.Errorf("%s: figure %q is not a positive number", m[1], v)
			}
		}
		if f, err := strconv.ParseFloat(m[5], 64); err != nil || f < 0 || f > 100 {
			t.Errorf("%s: steal %q%% is not a share", m[1], m[5])
		}
	}
	for _, kind := range peerWorkloads {
		if seen[kind] != 2 {
			t.Errorf("workload %s printed %d times, want once per round (2)\n%s", kind, seen[kind], text)
		}
	}
	ratio := regexp.MustCompile(`\| [0-9.]+ \| [0-9.]+ \| ([0-9.]+)x \(([0-9.]+)-([0-9.]+)\) \|`)
	rows := ratio.FindAllStringSubmatch(text, -1)
	if len(rows) != 6 {
		t.Fatalf("%d table rows with a ratio and its range, want 6 (four CPU, two RSS)\n%s", len(rows), text)
	}
	for _, r := range rows {
		med, _ := strconv.ParseFloat(r[1], 64)
		lo, _ := strconv.ParseFloat(r[2], 64)
		hi, _ := strconv.ParseFloat(r[3], 64)
		if !(lo <= med && med <= hi && lo > 0) {
			t.Errorf("ratio %s outside its range %s-%s", r[1], r[2], r[3])
		}
	}
	if !strings.Contains(text, "pacing lag p50") || !strings.Contains(text, "(steal)") {
		t.Errorf("no pacing lag line\n%s", text)
	}
	// The bare pacers' lag beside ackcheck's, each paced line with its own.
	for _, k := range []string{"bare-produce-paced", "bare-produce-sleeper"} {
		if !regexp.MustCompile(k + `'s pacing lag: p50 [0-9.]+ ms, p99 [0-9.]+ ms \(max [0-9.]+ ms\); ackcheck's p99 no worse in [0-2] of 2 rounds`).MatchString(text) {
			t.Errorf("no pacing lag line for %s\n%s", k, text)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^  \S+-(paced|sleeper) .* lag p99 [0-9.]+ ms`).FindAllString(text, -1)); n != 6 {
		t.Errorf("%d paced workload lines with their lag, want 6 (three paced workloads, two rounds)\n%s", n, text)
	}
}

// --pairs chooses the comparisons, each pair's bare workload before
// ackcheck's and in the benchmark's order; a read without the unpaced
// produce it reads, or a name that is no comparison, is refused.
func TestPeerWorkloadsOf(t *testing.T) {
	for _, c := range []struct {
		pairs   []string
		want    []string
		wantErr string
	}{
		{pairs: []string{"unpaced", "paced", "read"}, want: peerWorkloads},
		{pairs: []string{"read", "unpaced"}, want: []string{"bare-produce", "ackcheck-produce", "bare-consume", "ackcheck-verify"}},
		{pairs: []string{"paced"}, want: []string{"bare-produce-paced", "ackcheck-produce-paced", "bare-produce-sleeper"}},
		{pairs: []string{"unpaced", "unpaced"}, want: []string{"bare-produce", "ackcheck-produce"}},
		{pairs: []string{"read"}, wantErr: "read needs unpaced"},
		{pairs: []string{"fast"}, wantErr: `"fast": not a comparison`},
	} {
		got, err := peerWorkloadsOf(c.pairs)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error %v, want one saying %q", c.pairs, err, c.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: %v, %v; want %v", c.pairs, got, err, c.want)
		}
	}
}

// The workloads of a round that share a topic get one: created alike
// (drivers.Peer's CreateTopics, whose placement drivers/kafka tests).
func TestPeerTopicNames(t *testing.T) {
	topics := map[string]string{"bare-produce": "a", "ackcheck-produce": "b", "bare-consume": "b"}
	names := topicNames(topics, []string{"bare-produce", "ackcheck-produce", "bare-consume"})
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("the topics of three workloads, two of them sharing one: %v", names)
	}
}

// bench --peer --rates offers each rate to the bare client's window pacer
// and to ackcheck, and prints for each its lag, what ackcheck shed, the
// cores used and whether it kept (lag p99 < 1 ms, nothing shed), then
// each one's ceiling, or that none of the rates kept.
func TestBenchPeerCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four child processes against kfake")
	}
	out, err := exec.Command(binary(t), "bench", "--peer", "--rates", "4000,2000", "--rate-seconds", "1", "--dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("bench --peer --rates: %v\n%s", err, out)
	}
	text := string(out)
	line := regexp.MustCompile(`(?m)^ +([0-9]+) msg/s  (bare-produce-paced|ackcheck-produce-paced) +lag p50 +[0-9.]+ p99 +([0-9.]+) max +[0-9.]+ ms  shed +([0-9]+)  [0-9.]+ cores +[0-9.]+ CPU-s per 1M  kept (true|false) +load [0-9.]+$`)
	lines := line.FindAllStringSubmatch(text, -1)
	if len(lines) != 4 {
		t.Fatalf("%d rate lines, want 4 (two rates, two workloads each)\n%s", len(lines), text)
	}
	// In ascending order of rate, bare client first.
	if lines[0][1] != "2000" || lines[0][2] != "bare-produce-paced" || lines[3][1] != "4000" || lines[3][2] != "ackcheck-produce-paced" {
		t.Errorf("rates not in ascending order, bare first\n%s", text)
	}
	for _, l := range lines {
		p99, _ := strconv.ParseFloat(l[3], 64)
		shed, _ := strconv.Atoi(l[4])
		if want := p99 < 1 && shed == 0; (l[5] == "true") != want {
			t.Errorf("%s at %s msg/s: kept %s with lag p99 %.3f ms and %d shed", l[2], l[1], l[5], p99, shed)
		}
	}
	for _, kind := range []string{"bare-produce-paced", "ackcheck-produce-paced"} {
		if !regexp.MustCompile(`(?m)^ceiling of ` + kind + `: ([0-9]+ msg/s with lag p99 < 1 ms and nothing shed, [0-9]+ msg/s per core it used|none of the rates kept lag p99 < 1 ms with nothing shed)$`).MatchString(text) {
			t.Errorf("no ceiling line for %s\n%s", kind, text)
		}
	}
}
