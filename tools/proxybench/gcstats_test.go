package main

import (
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMarkState reads made-up counts: cycles ended and the GC's stops of
// the world (two a cycle: as its mark phase starts and as it ends).
func TestMarkState(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int, cycles, pauses uint64) gcObs {
		return gcObs{t0.Add(time.Duration(ms) * time.Millisecond), cycles, pauses}
	}
	for _, tc := range []struct {
		name   string
		obs    []gcObs
		want   []bool
		phases []time.Duration
	}{
		{"no GC", []gcObs{at(0, 3, 6), at(1, 3, 6), at(2, 3, 6)}, []bool{false, false, false}, nil},
		{"a phase over three readings", []gcObs{at(0, 3, 6), at(2, 3, 7), at(4, 3, 7), at(6, 4, 8), at(8, 4, 8)},
			[]bool{false, true, true, false, false}, []time.Duration{4 * time.Millisecond}},
		{"a phase inside one request", []gcObs{at(0, 3, 6), at(10, 4, 8), at(12, 4, 8)},
			[]bool{false, false, false}, []time.Duration{0}},
		{"marking at the first reading", []gcObs{at(0, 3, 7), at(2, 3, 7), at(4, 4, 8)},
			[]bool{true, true, false}, []time.Duration{3 * time.Millisecond}},
		{"the last stop not counted yet as the cycle counts as ended", []gcObs{at(0, 3, 6), at(2, 3, 7), at(4, 4, 7), at(6, 4, 8), at(8, 4, 9), at(10, 5, 10)},
			[]bool{false, true, false, false, true, false}, []time.Duration{2 * time.Millisecond, 2 * time.Millisecond}},
		{"a restarted mark phase stops the world once more", []gcObs{at(0, 3, 6), at(2, 3, 7), at(4, 3, 8), at(6, 4, 9), at(8, 4, 9), at(10, 4, 10), at(12, 5, 11)},
			[]bool{false, true, true, false, false, true, false}, []time.Duration{4 * time.Millisecond, 2 * time.Millisecond}},
		{"still marking at the last reading", []gcObs{at(0, 3, 6), at(2, 3, 7), at(4, 3, 7)},
			[]bool{false, true, true}, []time.Duration{3 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marking, phases := markState(tc.obs)
			if !slices.Equal(marking, tc.want) {
				t.Errorf("marking %v, want %v", marking, tc.want)
			}
			var got []time.Duration
			for _, p := range phases {
				got = append(got, p.end.Sub(p.start))
			}
			if !slices.Equal(got, tc.phases) {
				t.Errorf("phases %v, want %v", got, tc.phases)
			}
		})
	}
}

// TestGCFigures runs real requests, every fourth of which makes the server
// collect (runtime.GC: a whole cycle inside the request), and checks the
// probe counts those cycles and those requests.
func TestGCFigures(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			runtime.GC()
		}
		w.Write([]byte(`{"choices":[]}`))
	}))
	defer srv.Close()
	runtime.GC() // no cycle running as the first request starts
	bodies := make([]string, 40)
	for i := range bodies {
		bodies[i] = body
	}
	_, g := runLoaded(srv.Client(), srv.URL, bodies, 1, newGCProbe(len(bodies)))
	// Automatic cycles may add to the forced ones, and overlap requests.
	if g.cycles < 10 {
		t.Errorf("%d cycles, want at least the 10 forced", g.cycles)
	}
	if g.overlapped < 10 || g.overlapped > len(bodies) {
		t.Errorf("%d requests overlapped a mark phase, want at least the 10 that forced one", g.overlapped)
	}
	if g.cpu.total <= 0 || g.cpu.total < g.cpu.assist+g.cpu.dedicated+g.cpu.idle {
		t.Errorf("GC CPU %+v: want a positive total at least its mark classes", g.cpu)
	}
	if g.requests != len(bodies) || g.inMark.p50 <= 0 {
		t.Errorf("figures %+v", g)
	}
}

// TestGCSettingsLine: the table's heading names the GC percent as set,
// "off" rather than the runtime's 1<<64-1, and a soft memory limit in MiB.
func TestGCSettingsLine(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	if got := gcSettings(); !strings.Contains(got, "GOGC off, memory limit none") {
		t.Fatalf("GC off: %q", got)
	}
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(512 << 20)
	if got := gcSettings(); !strings.Contains(got, "GOGC 150, memory limit 512 MiB") {
		t.Fatalf("GOGC 150 and a 512 MiB limit: %q", got)
	}
}
