package load

import "testing"

func TestParseCPUTimes(t *testing.T) {
	tests := []struct {
		name   string
		stat   string
		want   CPUTimes
		wantOK bool
	}{
		{"linux 2.6.33+", "cpu  100 2 30 400 5 0 6 7 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", CPUTimes{Steal: 7, Total: 550}, true},
		{"no guest columns", "cpu 1 1 1 1 1 1 1 3\n", CPUTimes{Steal: 3, Total: 10}, true},
		{"too old: no steal", "cpu 1 1 1 1 1 1 1\n", CPUTimes{}, false},
		{"not the cpu line", "intr 1 2 3 4 5 6 7 8 9\n", CPUTimes{}, false},
		{"damaged", "cpu 1 1 x 1 1 1 1 3\n", CPUTimes{}, false},
		{"empty", "", CPUTimes{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseCPUTimes(tc.stat)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("parseCPUTimes = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestStealPct(t *testing.T) {
	if pct, ok := StealPct(CPUTimes{Steal: 10, Total: 1000}, CPUTimes{Steal: 30, Total: 1200}); !ok || pct != 10 {
		t.Fatalf("StealPct = %v, %v; want 10, true", pct, ok)
	}
	if _, ok := StealPct(CPUTimes{Steal: 10, Total: 1000}, CPUTimes{Steal: 10, Total: 1000}); ok {
		t.Fatal("StealPct over no time said ok")
	}
}
