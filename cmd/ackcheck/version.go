package main

import (
	"runtime/debug"
	"strings"
)

// versionOf describes the binary from its build info: the module version
// (a tag once published and installed with go install; "(devel)" or a
// pseudo-version from a clone), then the VCS revision, its time and
// whether the tree had uncommitted changes, when the go command stamped
// them (go build inside a git clone does; go test does not). ok false
// (a binary built without module support) gives "unknown".
func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown (no build information in this binary)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", with uncommitted changes"
			}
		}
	}
	var b strings.Builder
	b.WriteString(v)
	if rev != "" {
		b.WriteString(" (commit " + rev)
		if at != "" {
			b.WriteString(" of " + at)
		}
		b.WriteString(dirty + ")")
	}
	b.WriteString(", " + info.GoVersion)
	return b.String()
}

// buildVersion is this binary's versionOf.
func buildVersion() string { return versionOf(debug.ReadBuildInfo()) }
