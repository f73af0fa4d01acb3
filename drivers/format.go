package drivers

import (
	"fmt"
	"strings"
	"time"
)

// Settings rows (SettingsDescriber) and scenario files show values as
// people write them in a configuration: 5ms, 30s, 2m, 1 KiB; not
// Go's 2m0s or a bare byte count.

// HumanDuration writes d as a person would: 2m rather than 2m0s.
func HumanDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// HumanBytes writes n bytes with a binary unit where it divides exactly
// (1 KiB, 4 MiB), and in bytes otherwise (1500 B).
func HumanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n != 0 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// ApproxBytes is n in the largest binary unit it reaches, to one decimal
// ("1.5 GiB", "300.0 MiB", "512 B"): for estimates and free space, where
// HumanBytes's exact form would print 314572799 B.
func ApproxBytes(n uint64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
