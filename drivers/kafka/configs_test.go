package kafka

import (
	"strings"
	"testing"
)

func TestAckMeaning(t *testing.T) {
	tests := []struct {
		acks, flush, minISR string
		want                []string
	}{
		{"all", "1", "2", []string{"each in-sync follower (at least 2 replicas) wrote it and fsynced it"}},
		{"all", longMax, "2", []string{"to its page cache", "power loss"}},
		{"all", "?", "1", []string{"(at least 1 replica)", "unknown: the brokers did not report flush.messages"}},
		{"1", "1", "2", []string{"leader alone wrote it and fsynced it", "followers copy it later"}},
		{"1", longMax, "2", []string{"leader alone wrote it to its page cache"}},
		{"0", "1", "2", []string{"not answered"}},
	}
	for _, tc := range tests {
		got := ackMeaning(tc.acks, tc.flush, tc.minISR)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("acks=%s flush=%s: %q lacks %q", tc.acks, tc.flush, got, w)
			}
		}
		if tc.flush == "?" && strings.Contains(got, "none fsyncs") {
			t.Errorf("an unknown setting was described as known: %q", got)
		}
	}
}
