package nats_test

import (
	"os"
	"testing"

	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// ackcheck is the command, built once for the tests that run it as a
// user would (truth_rolling_real_test.go, truth_clusterfile_real_test.go);
// TestMain removes it.
var ackcheck scenariotest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	ackcheck.Remove()
	os.Exit(code)
}
