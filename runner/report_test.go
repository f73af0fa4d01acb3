package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
)

// Settings rows read as people write them: durations as 5ms and 30s, for
// every driver; a run.json written before drivers listed rows shows its
// saved settings as they are, without exponents.
func TestSettingsRowsAsPeopleWriteThem(t *testing.T) {
	kd, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	legacy, _ := json.Marshal(map[string]any{"Brokers": []string{"b:9092"}, "Acks": "all", "Linger": 5e6, "DeliveryTimeout": 3e10})
	tests := []struct {
		name string
		s    Settings
		want []string
	}{
		{"kafka", Settings{Driver: "kafka", DriverRows: kd.SettingsRows(), Rate: 1000, Duration: "1m0s", Producers: 4, MessageSize: 1024},
			[]string{"linger=5ms", "delivery timeout=30s", "acks=all", "rate=1000 msg/s for 1m, 4 producers", "message size=1 KiB"}},
		{"legacy run.json", Settings{Driver: "kafka", DriverSettings: legacy}, []string{"Linger=5ms", "DeliveryTimeout=30s", "Acks=all", `Brokers=["b:9092"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range settingsRows(tc.s, ledger.RunInfo{}) {
				got = append(got, r[0]+"="+r[1])
			}
			joined := strings.Join(got, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("rows lack %q:\n%s", w, joined)
				}
			}
			if strings.Contains(joined, "e+") {
				t.Errorf("a number in exponent form:\n%s", joined)
			}
		})
	}
}
