package memory

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/heapstat"
)

// What the in-memory index costs the garbage collector: every cycle marks
// the live heap, and the work is the pointers it follows (the objects it
// visits and the scannable bytes it reads), not the bytes held. With 10,000
// memories seeded as proxybench seeds its loaded scenario, it reports the
// heap with the index live and again with it dropped, and the difference:
//
//	go test -run '^$' -bench IndexGCFootprint -benchtime 20x ./host/memory/
//
// (10k and 100k units.)
//
// index-scan-B (the scannable heap the index adds, runtime/metrics
// /gc/scan/heap:bytes), index-objects and index-live-B are deterministic for
// one seed; gc-µs/op and gc-cpu-µs/op are one forced collection with the
// index live (wall clock and the collector's CPU: noisier), and
// index-gc-cpu-µs/op the part of that CPU the index adds (the same
// collections timed with the index dropped, subtracted).

// gcCPU is the collector's CPU time so far, seconds.
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// forcedGCs runs n collections and returns their wall time and the
// collector's CPU time (seconds).
func forcedGCs(n int) (time.Duration, float64) {
	var wall time.Duration
	cpu0 := gcCPU()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		runtime.GC()
		wall += time.Since(t0)
	}
	return wall, gcCPU() - cpu0
}

func BenchmarkIndexGCFootprint10k(b *testing.B)  { benchGCFootprint(b, 10_000) }
func BenchmarkIndexGCFootprint100k(b *testing.B) { benchGCFootprint(b, 100_000) }

func benchGCFootprint(b *testing.B, n int) {
	s := seededAgent(b, n)
	with := heapstat.Now()
	s.StopIndex()
	without := heapstat.Now()
	_, cpuWithout := forcedGCs(b.N)
	if err := s.StartIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	with = heapstat.Now() // as rebuilt, for the timings below
	b.ResetTimer()
	wall, cpu := forcedGCs(b.N)
	b.StopTimer()
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N), "gc-µs/op")
	b.ReportMetric(cpu*1e6/float64(b.N), "gc-cpu-µs/op")
	b.ReportMetric((cpu-cpuWithout)*1e6/float64(b.N), "index-gc-cpu-µs/op")
	b.ReportMetric(float64(with.Scan-without.Scan), "index-scan-B")
	b.ReportMetric(float64(with.Objects-without.Objects), "index-objects")
	b.ReportMetric(float64(with.Live-without.Live), "index-live-B")
	b.ReportMetric(float64(with.Scan), "heap-scan-B")
	b.ReportMetric(float64(with.Objects), "heap-objects")
	if load, ok := loadAverage(); ok {
		b.ReportMetric(load, "load1")
	}
}
