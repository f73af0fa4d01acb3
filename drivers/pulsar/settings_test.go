package pulsar

import (
	"fmt"
	"strings"
	"testing"
)

func TestSettingsRows(t *testing.T) {
	got := fmt.Sprint(Config{ServiceURL: "pulsar://a:6650", AdminURL: "http://a:8080"}.rows())
	for _, want := range []string{"[batching on, max publish delay 10ms]", "[send timeout 30s]", "[namespace public/default]"} {
		if !strings.Contains(got, want) {
			t.Errorf("rows %s lack %s", got, want)
		}
	}
}
