package kafka_test

import (
	"os"
	"testing"

	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
)

// ackcheck is the command, built once for the tests that run it as a
// user would (truth_ssh_real_test.go); TestMain removes it.
var ackcheck scenariotest.Binary

// TestMain runs the tests, or, started by kfake_powerloss_test.go as its
// child process, serves kfake until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv(envKfakeDir); dir != "" {
		os.Exit(kfakeHelper(dir))
	}
	code := m.Run()
	ackcheck.Remove()
	os.Exit(code)
}
