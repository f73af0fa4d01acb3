package report

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/ackcheck/ackcheck/verifier"
)

// junitSuite is the JUnit XML format CI systems read.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// Check is one JUnit test case: a name and why it failed ("" passes).
type Check struct {
	Name, Failure string
}

// Checks lists the verdict's checks, failing where the verdict fails:
// every failing reason belongs to exactly one case.
func Checks(r *verifier.Result) []Check {
	fail := func(bad bool, format string, args ...any) string {
		if !bad {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	cs := []Check{
		{"no acked message lost", fail(r.Lost > 0, "%d acked messages were not read back", r.Lost)},
		{"no corruption", fail(r.Corrupt > 0, "%d copies failed their checksum", r.Corrupt)},
		{"no phantom", fail(r.Phantom > 0, "%d messages read that were never sent", r.Phantom)},
		{"read-back complete", fail(!r.ReadBackComplete, "the read-back did not reach every partition's end")},
		{"something sent", fail(r.Sent == 0, "nothing was sent")},
	}
	reasons := map[string]bool{}
	for _, x := range r.Reasons {
		reasons[x] = true
	}
	dup, ord, other := "", "", []string{}
	for _, x := range r.Reasons {
		if !reasons[x] {
			continue
		}
		reasons[x] = false
		switch {
		case strings.Contains(x, "duplicate copies"):
			dup = x
		case strings.Contains(x, "out of order"):
			ord = x
		case strings.Contains(x, "acked messages were not read back"), strings.Contains(x, "failed their checksum"),
			strings.Contains(x, "never sent"), strings.Contains(x, "read-back did not reach"), strings.Contains(x, "nothing was sent"):
		default:
			other = append(other, x)
		}
	}
	cs = append(cs, Check{"no duplicates (--no-duplicates)", dup}, Check{"in order (--ordered)", ord})
	for _, x := range other { // deadlines, unexpected deaths
		cs = append(cs, Check{x, x})
	}
	return cs
}

// JUnit renders the checks as JUnit XML.
func JUnit(r *verifier.Result) ([]byte, error) {
	s := junitSuite{Name: "ackcheck " + r.RunID}
	for _, c := range Checks(r) {
		jc := junitCase{Name: c.Name, Classname: "ackcheck." + r.Driver}
		if c.Failure != "" {
			jc.Failure = &junitFailure{Message: c.Failure, Text: c.Failure}
			s.Failures++
		}
		s.Cases = append(s.Cases, jc)
	}
	s.Tests = len(s.Cases)
	out, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}
