package drivers

import (
	"maps"
	"slices"
	"strings"
)

// SetProperty sets key=value in a Java properties file: it replaces the
// first uncommented line for key, removes later ones, or appends the
// setting. Other lines, comments included, are kept as they are.
func SetProperty(content, key, value string) string {
	lines := strings.Split(content, "\n")
	done := false
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "!") {
			k, _, ok := strings.Cut(t, "=")
			if !ok {
				k, _, ok = strings.Cut(t, ":")
			}
			if ok && strings.TrimSpace(k) == key {
				if !done {
					out = append(out, key+"="+value)
					done = true
				}
				continue
			}
		}
		out = append(out, l)
	}
	if !done {
		if len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		out = append(out, key+"="+value, "")
	}
	return strings.Join(out, "\n")
}

// Properties is props as a Java properties file, one key=value a line,
// sorted by key.
func Properties(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k + "=" + props[k] + "\n")
	}
	return b.String()
}
