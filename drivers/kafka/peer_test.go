package kafka

import "testing"

// Every topic of a round is created alike, and in kfake every topic's
// partition p is led by broker p mod 3, so that the two workloads of a
// pair send to the same placement of leaders (kfake's own is random per
// topic).
func TestPeerTopicsAreLedAlike(t *testing.T) {
	fake, err := StartEmbedded(3)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if err := createPeerTopics(t.Context(), fake.Addrs(), 16, fake, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		for p := range int32(16) {
			if got := fake.c.LeaderFor(topic, p); got != p%3 {
				t.Fatalf("partition %d of %s is led by broker %d, want %d", p, topic, got, p%3)
			}
		}
	}
}
