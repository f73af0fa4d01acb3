package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// OMB's workload files map onto ackcheck's flags; what cannot be honoured
// is named in one line; flags given override.
func TestWorkloadFiles(t *testing.T) {
	tests := []struct {
		file       string
		args       []string
		want       map[string]string // flag -> value after
		partial    bool
		line       []string // the line says each
		notInLine  []string
		wantErrSub string
	}{
		{file: "1-topic-16-partitions-1kb.yaml",
			want: map[string]string{"partitions": "16", "message-size": "1024", "producers": "1", "rate": "50000", "duration": "15m0s", "keys": "0"},
			line: []string{`workload "1 topic / 16 partitions / 1Kb"`, "--partitions 16", "--rate 50000", "--duration 15m", "sent otherwise: payloadFile payload/payload-1Kb.data"},
			// Fields at values that ask nothing of ackcheck are not named,
			// and a payload file alone is not refused.
			notInLine: []string{"topics", "subscriptionsPerTopic", "consumerBacklogSizeGB", "not honoured"}},
		// Refused by default, each field named.
		{file: "1-topic-100-partitions-1kb-4p-4c-200k-backlog.yaml", args: []string{"--rate", "500", "--duration", "30s"},
			wantErrSub: "asks for what ackcheck cannot do, so it would run something else:\n  consumerPerSubscription 4: several consumers per subscription (ackcheck reads with one live consumer)\n  consumerBacklogSizeGB 512: a backlog phase"},
		{file: "10-topics-max-rate-with-key.yaml", wantErrSub: "topics 10: several topics (ackcheck writes one)\n  subscriptionsPerTopic 2: several subscriptions"},
		{file: "10-topics-max-rate-with-key.yaml", wantErrSub: "producerRate 0: OMB searches for the highest rate"},
		{file: "10-topics-max-rate-with-key.yaml", wantErrSub: "give --workload-partial to run the rest without them"},
		{file: "misspelled.yaml", wantErrSub: "misspelled.yaml:3: partitionPerTopic is not an OpenMessaging Benchmark field: did you mean partitionsPerTopic?"},
		{file: "misspelled.yaml", partial: true, wantErrSub: "did you mean partitionsPerTopic?"},
		{file: "unknown-field.yaml", wantErrSub: "not OpenMessaging Benchmark fields: retentionPolicy (line 4)"},
		{file: "unknown-field.yaml", partial: true, want: map[string]string{"partitions": "8"},
			line: []string{"not honoured (--workload-partial): not OpenMessaging Benchmark fields: retentionPolicy (line 4)"}},
		// --workload-partial runs the rest, naming each.
		{file: "1-topic-100-partitions-1kb-4p-4c-200k-backlog.yaml", args: []string{"--rate", "500", "--duration", "30s"}, partial: true,
			want: map[string]string{"partitions": "100", "producers": "4", "rate": "500", "duration": "30s"},
			line: []string{"kept from the command line: --rate over producerRate, --duration over testDurationMinutes",
				"useRandomizedPayloads true", "consumerPerSubscription 4", "consumerBacklogSizeGB 512: a backlog phase"},
			notInLine: []string{"randomBytesRatio"}},
		{file: "1-topic-1-partition-1kb-increment.yaml",
			want: map[string]string{"partitions": "1", "rate": "1000", "duration": "15m0s"}, partial: true,
			line: []string{"producerIncrementRate 100: a rising rate"}},
		{file: "1-topic-1-partition-1kb-increment.yaml", wantErrSub: "producerIncrementRate 100: a rising rate"},
		{file: "10-topics-max-rate-with-key.yaml", partial: true,
			want: map[string]string{"partitions": "3", "rate": "1000", "keys": "10000", "producers": "2", "message-size": "100"},
			line: []string{"topics 10: several topics", "subscriptionsPerTopic 2", "producerRate 0: OMB searches", "RANDOM_NANO", "warmupDurationMinutes 1"}},
		{file: "bad-partitions.yaml", wantErrSub: `bad-partitions.yaml:3: partitionsPerTopic: must be a whole number of at least 1, got "sixteen"`},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			cmd := newRunCmd()
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			line, err := applyWorkload(cmd.Flags(), filepath.Join("testdata", "omb", tc.file), tc.partial)
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("error %v, want %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for flag, want := range tc.want {
				if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
					t.Errorf("--%s = %s, want %s", flag, got, want)
				}
			}
			for _, s := range tc.line {
				if !strings.Contains(line, s) {
					t.Errorf("line %q does not say %q", line, s)
				}
			}
			for _, s := range tc.notInLine {
				if strings.Contains(line, s) {
					t.Errorf("line %q names %q, which asks nothing", line, s)
				}
			}
			if strings.Count(line, "\n") > 0 {
				t.Errorf("more than one line: %q", line)
			}
		})
	}
	// The placeholder takes the environment's value when it is set.
	t.Setenv("ombTestDuration", "2")
	cmd := newRunCmd()
	if _, err := applyWorkload(cmd.Flags(), "testdata/omb/1-topic-1-partition-1kb-increment.yaml", true); err != nil {
		t.Fatal(err)
	}
	if d := cmd.Flags().Lookup("duration").Value.String(); d != "2m0s" {
		t.Errorf("${ombTestDuration:-15} with ombTestDuration=2 gave --duration %s", d)
	}
}

// A workload runs end to end on kfake, shortened from the command line.
func TestWorkloadRun(t *testing.T) {
	c := kfakeCluster(t)
	out := t.TempDir() + "/w"
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","), "--out", out,
		"--workload", "testdata/omb/1-topic-16-partitions-1kb.yaml", "--rate", "300", "--duration", "2s"}, &stdout, &stderr)
	if code != exitPass {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), `workload "1 topic / 16 partitions / 1Kb"`) {
		t.Errorf("the mapping line is not printed: %s", stdout.String())
	}
	r := readResult(t, out)
	if r.Acked != 600 {
		t.Errorf("acked %d, want 600", r.Acked)
	}
}
