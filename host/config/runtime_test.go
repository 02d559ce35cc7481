package config

import (
	"strings"
	"testing"
)

// TestGCPercent: runtime.gc_percent defaults to 200, takes any positive
// percent from the file, the environment or `config set`, and refuses 0
// (collect without pause) and negatives (collector off) with an error that
// names the key, where the value came from and the fix.
func TestGCPercent(t *testing.T) {
	if got := Default(t.TempDir()).Runtime.GCPercent; got != 200 {
		t.Errorf("default runtime.gc_percent %d, want 200", got)
	}
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       int      // when valid
		errs       []string // substrings of the error, when not
	}{
		{"unset", "", nil, 200, nil},
		{"Go's own", "runtime:\n  gc_percent: 100\n", nil, 100, nil},
		{"low", "runtime:\n  gc_percent: 25\n", nil, 25, nil},
		{"high", "runtime:\n  gc_percent: 800\n", nil, 800, nil},
		{"from the environment", "runtime:\n  gc_percent: 100\n", map[string]string{"METACLAW_RUNTIME_GC_PERCENT": "300"}, 300, nil},
		{"off", "runtime:\n  gc_percent: -1\n", nil, 0, []string{
			"config.yaml:2", "`runtime.gc_percent`", "is -1", "turn the garbage collector off",
			"Fix: `metaclaw config set runtime.gc_percent 200`", "GOGC=off"}},
		{"zero", "runtime:\n  gc_percent: 0\n", nil, 0, []string{
			"config.yaml:2", "`runtime.gc_percent`", "is 0", "without pause", "Fix: `metaclaw config set runtime.gc_percent 200`"}},
		{"off from the environment", "", map[string]string{"METACLAW_RUNTIME_GC_PERCENT": "-1"}, 0, []string{
			"env METACLAW_RUNTIME_GC_PERCENT", "`runtime.gc_percent`", "is -1"}},
		{"off spelled as GOGC spells it", "runtime:\n  gc_percent: off\n", nil, 0, []string{
			"`runtime.gc_percent`", "expected an integer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.yaml != "" {
				files[ConfigFile] = tc.yaml
			}
			c, err := LoadWith(writeHome(t, files), envMap(tc.env))
			if tc.errs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c.Runtime.GCPercent != tc.want {
					t.Errorf("runtime.gc_percent %d, want %d", c.Runtime.GCPercent, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error with %q", tc.errs)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestSetGCPercent: `metaclaw config set` refuses what Load refuses and
// leaves the file as it was.
func TestSetGCPercent(t *testing.T) {
	home := writeHome(t, nil)
	if err := Set(home, "runtime.gc_percent", "100"); err != nil {
		t.Fatal(err)
	}
	err := Set(home, "runtime.gc_percent", "-1")
	if err == nil || !strings.Contains(err.Error(), "`runtime.gc_percent`") || !strings.Contains(err.Error(), "config set runtime.gc_percent 200") {
		t.Fatalf("set -1: %v", err)
	}
	c, err := LoadWith(home, noEnv)
	if err != nil || c.Runtime.GCPercent != 100 {
		t.Fatalf("after the refused set: %v, %v", c, err)
	}
}
