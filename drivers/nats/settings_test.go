package nats

import (
	"fmt"
	"testing"
)

func TestSettingsRows(t *testing.T) {
	got := fmt.Sprint(Config{Servers: []string{"nats://a:4222"}}.rows())
	want := "[[servers nats://a:4222] [publish timeout 30s] [ack timeout 5s] [max pending 10000 publishes per producer]]"
	if got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}
