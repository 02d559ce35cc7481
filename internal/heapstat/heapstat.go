// Package heapstat reads what the garbage collector has to mark: the live
// heap after full collections, the part of it that may hold pointers (the
// bytes a mark reads) and its object count (the objects it visits). Tests
// and benchmarks use it to hold long-lived structures (indexes,
// vocabularies) to a small footprint; the figures are deterministic for a
// given build and input, unlike a GC's duration.
package heapstat

import (
	"runtime"
	"runtime/metrics"
)

// Figures are the heap's live bytes, scannable bytes and objects.
type Figures struct{ Live, Scan, Objects int64 }

// Minus is f - o, field by field: what was built between two readings.
func (f Figures) Minus(o Figures) Figures {
	return Figures{f.Live - o.Live, f.Scan - o.Scan, f.Objects - o.Objects}
}

// Now collects fully and reads the figures. It collects twice: objects
// with finalizers the first collection found are freed by the second.
func Now() Figures {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/scan/heap:bytes"},
		{Name: "/gc/heap/objects:objects"},
	}
	metrics.Read(s)
	return Figures{int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64()), int64(s[2].Value.Uint64())}
}
