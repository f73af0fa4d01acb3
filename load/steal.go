package load

import (
	"os"
	"strconv"
	"strings"
)

// CPUTimes is the machine's CPU time in clock ticks, from /proc/stat.
type CPUTimes struct {
	Steal, Total uint64
}

// ReadCPUTimes reads /proc/stat; ok is false where there is none or it
// cannot be read.
func ReadCPUTimes() (t CPUTimes, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t, false
	}
	return parseCPUTimes(string(data))
}

// parseCPUTimes reads the first line of /proc/stat: "cpu" then user, nice,
// system, idle, iowait, irq, softirq, steal (then guest and guest_nice,
// which user already counts).
func parseCPUTimes(stat string) (t CPUTimes, ok bool) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return t, false
	}
	for i, v := range fields[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return CPUTimes{}, false
		}
		t.Total += n
		if i == 7 {
			t.Steal = n
		}
	}
	return t, true
}

// StealPct is the share, in percent, of the machine's CPU time between
// from and to that the hypervisor gave to something else (steal): time in
// which a virtual CPU of this machine, ready to run the load or the
// broker, did not run. ok is false when no time passed.
func StealPct(from, to CPUTimes) (pct float64, ok bool) {
	if to.Total <= from.Total || to.Steal < from.Steal {
		return 0, false
	}
	return 100 * float64(to.Steal-from.Steal) / float64(to.Total-from.Total), true
}
