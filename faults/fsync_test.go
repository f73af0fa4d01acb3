package faults

import (
	"strings"
	"testing"
)

func TestSetProperty(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"append", "a=1\nb=2\n", "a=1\nb=2\nlog.flush.interval.messages=1\n"},
		{"replace", "a=1\nlog.flush.interval.messages = 9\nb=2\n", "a=1\nlog.flush.interval.messages=1\nb=2\n"},
		{"keep comment", "#log.flush.interval.messages=1\n", "#log.flush.interval.messages=1\nlog.flush.interval.messages=1\n"},
		{"drop duplicates", "log.flush.interval.messages=5\nx=y\nlog.flush.interval.messages=6\n", "log.flush.interval.messages=1\nx=y\n"},
		{"colon form", "log.flush.interval.messages: 3\n", "log.flush.interval.messages=1\n"},
		{"empty", "", "log.flush.interval.messages=1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SetProperty(tc.in, "log.flush.interval.messages", "1"); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSetNATSSyncInterval(t *testing.T) {
	conf := "port: 4222\njetstream {\n  store_dir: /data\n  max_mem: 1G\n}\ncluster { name: c }\n"
	on, err := SetNATSSyncInterval(conf, "always")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(on, "jetstream {\n  sync_interval: always\n  store_dir: /data") || !strings.HasSuffix(on, "}\ncluster { name: c }\n") {
		t.Fatalf("insert:\n%s", on)
	}
	off, err := SetNATSSyncInterval(on, "2m")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(off, "sync_interval") != 1 || !strings.Contains(off, "sync_interval: 2m\n") {
		t.Fatalf("replace:\n%s", off)
	}
	// A sync_interval outside the block is not touched.
	other := "sync_interval: 5s\njetstream: {\n store_dir: x\n}\n"
	got, err := SetNATSSyncInterval(other, "always")
	if err != nil || !strings.HasPrefix(got, "sync_interval: 5s\n") || !strings.Contains(got, "sync_interval: always") {
		t.Fatalf("outside: %q %v", got, err)
	}
	if _, err := SetNATSSyncInterval("port: 4222\n", "always"); err == nil {
		t.Fatal("a config without jetstream was edited")
	}
}
