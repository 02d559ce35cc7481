package daemon

import "testing"

func TestProcsFor(t *testing.T) {
	for _, tc := range []struct {
		name          string
		env           string
		nice, current int
		want          int
	}{
		{"niced jobs get a P above the CPUs", "", 10, 2, 2 + extraProcs},
		{"an explicit GOMAXPROCS wins", "2", 10, 2, 0},
		{"an explicit GOMAXPROCS wins even when odd", "junk", 10, 2, 0},
		{"no niced jobs, Go's default", "", 0, 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := procsFor(tc.env, tc.nice, tc.current); got != tc.want {
				t.Errorf("procsFor(%q, %d, %d) = %d, want %d", tc.env, tc.nice, tc.current, got, tc.want)
			}
		})
	}
}
