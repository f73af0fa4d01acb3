package nats

import (
	"strings"
	"testing"
)

func TestSetSyncInterval(t *testing.T) {
	conf := "port: 4222\njetstream {\n  store_dir: /data\n  max_mem: 1G\n}\ncluster { name: c }\n"
	on, err := SetSyncInterval(conf, "always")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(on, "jetstream {\n  sync_interval: always\n  store_dir: /data") || !strings.HasSuffix(on, "}\ncluster { name: c }\n") {
		t.Fatalf("insert:\n%s", on)
	}
	off, err := SetSyncInterval(on, "2m")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(off, "sync_interval") != 1 || !strings.Contains(off, "sync_interval: 2m\n") {
		t.Fatalf("replace:\n%s", off)
	}
	// A sync_interval outside the block is not touched.
	other := "sync_interval: 5s\njetstream: {\n store_dir: x\n}\n"
	got, err := SetSyncInterval(other, "always")
	if err != nil || !strings.HasPrefix(got, "sync_interval: 5s\n") || !strings.Contains(got, "sync_interval: always") {
		t.Fatalf("outside: %q %v", got, err)
	}
	if _, err := SetSyncInterval("port: 4222\n", "always"); err == nil {
		t.Fatal("a config without jetstream was edited")
	}
}
