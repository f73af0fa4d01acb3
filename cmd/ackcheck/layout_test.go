package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is ackcheck's module path, as go.mod names it.
const module = "github.com/ackcheck/ackcheck"

// brokerNeutral are the packages under drivers/ that name no broker: the
// driver seam, the one list of brokers, and the conformance suite.
var brokerNeutral = []string{module + "/drivers", module + "/drivers/brokers", module + "/drivers/drivertest"}

// brokerImportExempt are files of cmd/ackcheck allowed, for now, to
// import a broker's package, each with why. The check fails once an entry
// no longer does, or is gone, so that the entry goes with the import.
// None is left: bench --peer takes its bare client through the profile.
var brokerImportExempt = map[string]string{}

// brokerLayout reports each way the Go files under root (every file,
// tests too, in every directory below it) break the rule that a broker is
// its own directory: a file named after a broker of names, or an import
// of a package under drivers/ other than the broker-neutral ones. exempt
// names files (by base name) allowed to import a broker's package; one
// that no longer does is reported too.
func brokerLayout(root string, names []string, exempt map[string]string) ([]string, error) {
	var problems []string
	used := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		base := d.Name()
		for _, n := range names {
			if strings.Contains(base, n) {
				problems = append(problems, path+": named after "+n+" (a broker's files live in drivers/"+n+"/)")
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module+"/drivers/") || slices.Contains(brokerNeutral, p) {
				continue
			}
			if _, ok := exempt[base]; ok {
				used[base] = true
				continue
			}
			problems = append(problems, path+": imports "+p+" (take what it needs through drivers.Profile and drivers/brokers, or move it to that broker's directory)")
		}
		return nil
	})
	for base, why := range exempt {
		switch _, serr := os.Stat(filepath.Join(root, base)); {
		case serr != nil:
			problems = append(problems, filepath.Join(root, base)+": exempt ("+why+") but not there: remove its exemption")
		case !used[base]:
			problems = append(problems, filepath.Join(root, base)+": no longer imports a broker's package ("+why+"): remove its exemption")
		}
	}
	slices.Sort(problems)
	return problems, err
}

// Issue 41: scenarios/ and the command hold no file named after a broker
// and import no broker's package; a broker's truth tests, oracle and
// scenarios live in drivers/<broker>/.
func TestNoBrokerPackageImported(t *testing.T) {
	names := profileNames()
	for dir, exempt := range map[string]map[string]string{".": brokerImportExempt, filepath.Join("..", "..", "scenarios"): nil} {
		problems, err := brokerLayout(dir, names, exempt)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// The check fires on a file named after a broker, on an import of a
// broker's package (test files too), and on a stale exemption, and stays
// quiet on the broker-neutral packages.
func TestBrokerLayoutFires(t *testing.T) {
	const clean = `package x
import (
	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/brokers"
	"github.com/ackcheck/ackcheck/drivers/drivertest"
	"github.com/ackcheck/ackcheck/runner"
)
`
	imports := func(p string) string { return "package x\nimport _ \"" + module + "/" + p + "\"\n" }
	tests := []struct {
		name   string
		files  map[string]string
		exempt map[string]string
		want   []string
	}{
		{"clean", map[string]string{"run.go": clean, "sub/x_test.go": clean, "testdata/kafka.go": imports("drivers/kafka")}, nil, nil},
		{"named after a broker", map[string]string{"kafka_real_test.go": clean}, nil, []string{"kafka_real_test.go: named after kafka"}},
		{"a broker's package", map[string]string{"inputs.go": imports("drivers/kafka")}, nil, []string{"inputs.go: imports " + module + "/drivers/kafka "}},
		{"a broker's test helper, in a test", map[string]string{"sub/x_test.go": imports("drivers/nats/natstest")}, nil, []string{"sub/x_test.go: imports " + module + "/drivers/nats/natstest "}},
		{"exempt", map[string]string{"peer.go": imports("drivers/kafka")}, map[string]string{"peer.go": "why"}, nil},
		{"stale exemption", map[string]string{"peer.go": clean}, map[string]string{"peer.go": "why"}, []string{"peer.go: no longer imports"}},
		{"exempt file gone", map[string]string{"run.go": clean}, map[string]string{"peer.go": "why"}, []string{"peer.go: exempt (why) but not there"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, src := range tc.files {
				path := filepath.Join(root, name)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := brokerLayout(root, []string{"kafka", "nats"}, tc.exempt)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d problems like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], filepath.Join(root, w[:strings.Index(w, ":")])+w[strings.Index(w, ":"):]) {
					t.Errorf("problem %d: %q, want it to start with %q", i, got[i], w)
				}
			}
		})
	}
}
