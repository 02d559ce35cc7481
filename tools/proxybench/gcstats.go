package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/metaclaw-go/metaclaw/host/daemon"
)

// The GC figures of a loaded run: how many cycles ended during it, how much
// CPU they took (runtime/metrics' estimates, idle-priority marking
// included), how long their mark phases lasted, and which requests a mark
// phase overlapped, to compare those requests' latency with the others'.
//
// runtime/metrics has no "marking now" figure, but each cycle stops the
// world twice, as its mark phase starts and as it ends, and
// /sched/pauses/total/gc counts those stops: a stop since the last cycle
// ended means a mark phase has begun. The client reads the counts between
// requests (0.3 µs, no allocation), so a request overlapped a mark phase
// if one was running as it started or the counts moved while it ran; the
// phases' start and end are known to within the request they fell in.

// gcObs is one reading of the counts.
type gcObs struct {
	t              time.Time
	cycles, pauses uint64
}

// gcProbe reads the counts (not safe for concurrent use: runLoaded's
// requests are sequential).
type gcProbe struct {
	samples []metrics.Sample
	obs     []gcObs
}

func newGCProbe(n int) *gcProbe {
	return &gcProbe{
		samples: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}},
		obs:     make([]gcObs, 0, n+1),
	}
}

// observe records the counts now.
func (p *gcProbe) observe() {
	metrics.Read(p.samples)
	var pauses uint64
	if p.samples[1].Value.Kind() == metrics.KindFloat64Histogram {
		for _, c := range p.samples[1].Value.Float64Histogram().Counts {
			pauses += c
		}
	}
	var cycles uint64
	if p.samples[0].Value.Kind() == metrics.KindUint64 {
		cycles = p.samples[0].Value.Uint64()
	}
	p.obs = append(p.obs, gcObs{time.Now(), cycles, pauses})
}

// markPhase is a mark phase seen between readings.
type markPhase struct{ start, end time.Time }

// markState says, for each reading, whether a mark phase was running, and
// returns the mark phases that began and ended between the first reading
// and the last. At each cycle's end the count of stops becomes the new
// base, so a misread (a restarted mark phase, see the runtime's issue 27993,
// stops the world once more; a cycle may begin just as the last ends) lasts
// until the next cycle ends at most.
func markState(obs []gcObs) (marking []bool, phases []markPhase) {
	if len(obs) == 0 {
		return nil, nil
	}
	marking = make([]bool, len(obs))
	// At the first reading, two stops per cycle ended tell.
	o := obs[0]
	base := o.pauses
	if o.pauses > 2*o.cycles && (o.pauses-2*o.cycles)%2 == 1 {
		base--
	}
	marking[0] = o.pauses > base
	var start time.Time // of the running phase (clipped to the readings)
	if marking[0] {
		start = o.t
	}
	for k := 1; k < len(obs); k++ {
		prev, o := obs[k-1], obs[k]
		mid := prev.t.Add(o.t.Sub(prev.t) / 2)
		if !marking[k-1] && o.pauses > base {
			start = mid // a phase began in this gap
		}
		if m := o.cycles - prev.cycles; m > 0 {
			// One ended in this gap (the one started here, perhaps).
			if !start.IsZero() {
				phases = append(phases, markPhase{start, mid})
			}
			start = time.Time{}
			prevBase := base
			base = o.pauses
			if o.pauses == prevBase+2*m-1 {
				// The last stop counts as the world restarts, just
				// after the cycle counts as ended: it is coming.
				base++
			}
		}
		marking[k] = o.pauses > base
	}
	if last := obs[len(obs)-1]; !start.IsZero() && marking[len(obs)-1] {
		phases = append(phases, markPhase{start, last.t})
	}
	return marking, phases
}

// gcCPU is the GC's CPU (seconds, runtime/metrics' estimates) by class.
type gcCPU struct{ assist, dedicated, idle, pause, total float64 }

var gcCPUNames = []string{
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/mark/dedicated:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/gc/pause:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
}

// readGCCPU reads the GC's CPU so far (the runtime adds a cycle's when it
// ends).
func readGCCPU() gcCPU {
	s := make([]metrics.Sample, len(gcCPUNames))
	for i, n := range gcCPUNames {
		s[i].Name = n
	}
	metrics.Read(s)
	v := make([]float64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindFloat64 {
			v[i] = s[i].Value.Float64()
		}
	}
	return gcCPU{v[0], v[1], v[2], v[3], v[4]}
}

func (a gcCPU) sub(b gcCPU) gcCPU {
	return gcCPU{a.assist - b.assist, a.dedicated - b.dedicated, a.idle - b.idle, a.pause - b.pause, a.total - b.total}
}

// gcRun is one target's GC figures.
type gcRun struct {
	cycles            uint64
	elapsed           time.Duration
	markTotal         time.Duration
	markMax           time.Duration
	cpu               gcCPU
	overlapped        int
	inMark, outOfMark result // latency of the requests a mark phase overlapped, and of the others
	requests          int
}

// gcFigures computes a run's figures from its readings (one before each
// request and one after the last), its latencies in request order, and
// the GC's CPU before and after it.
func gcFigures(obs []gcObs, lat []time.Duration, cpu0, cpu1 gcCPU) gcRun {
	r := gcRun{cpu: cpu1.sub(cpu0), requests: len(lat)}
	if len(obs) < 2 || len(obs) != len(lat)+1 {
		return r
	}
	r.cycles = obs[len(obs)-1].cycles - obs[0].cycles
	r.elapsed = obs[len(obs)-1].t.Sub(obs[0].t)
	marking, phases := markState(obs)
	for _, p := range phases {
		d := p.end.Sub(p.start)
		r.markTotal += d
		r.markMax = max(r.markMax, d)
	}
	var in, out []time.Duration
	for i, d := range lat {
		a, b := obs[i], obs[i+1]
		if marking[i] || b.pauses != a.pauses || b.cycles != a.cycles {
			in = append(in, d)
		} else {
			out = append(out, d)
		}
	}
	r.overlapped = len(in)
	r.inMark, r.outOfMark = percentiles(in), percentiles(out)
	return r
}

// percentiles is summarize's p50 and p99 without the rate, and zero for
// no requests.
func percentiles(lat []time.Duration) result {
	if len(lat) == 0 {
		return result{}
	}
	lat = slices.Clone(lat)
	slices.Sort(lat)
	return result{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

// gcSettings describes the GC's settings of this process (read, not set:
// turning the GC off and on again would wait for a running cycle).
func gcSettings() string {
	percent, limit := daemon.GCSettings() // off comes back as -1
	gogc, lim := fmt.Sprint(percent), "none"
	if percent < 0 {
		gogc = "off"
	}
	if limit >= 0 && limit < math.MaxInt64 {
		lim = fmt.Sprintf("%d MiB", limit>>20)
	}
	return fmt.Sprintf("GOMAXPROCS %d on %d CPUs, GOGC %s, memory limit %s", runtime.GOMAXPROCS(0), runtime.NumCPU(), gogc, lim)
}

// heapFigures reads the live heap (as the last cycle marked it) and the
// heap goal, in MiB.
func heapFigures() (live, goal float64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = float64(s[0].Value.Uint64()) / (1 << 20)
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		goal = float64(s[1].Value.Uint64()) / (1 << 20)
	}
	return live, goal
}

// printGC prints the GC table of the loaded scenario's targets, in order.
func printGC(out io.Writer, names []string, runs map[string]gcRun) {
	live, goal := heapFigures()
	fmt.Fprintf(out, "\nGC during each run (%s; after the runs: live heap %.0f MiB, heap goal %.0f MiB). Mark phases are seen between requests, so their times are ±1 request; GC CPU is runtime/metrics' estimate of the cycles that ended in the run, idle-priority marking included:\n\n",
		gcSettings(), live, goal)
	fmt.Fprintln(out, "| target | GC cycles | one every | mark phases, total | longest | GC CPU per request | of which assist / dedicated / idle / pause | requests a mark phase overlapped | their p50 | p99 | the others' p50 | p99 |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, name := range names {
		r, ok := runs[name]
		if !ok {
			continue
		}
		every := "-"
		if r.cycles > 0 {
			every = fmt.Sprintf("%.0f ms", ms(r.elapsed/time.Duration(r.cycles)))
		}
		perReq := func(s float64) float64 { return s * 1000 / float64(max(r.requests, 1)) }
		fmt.Fprintf(out, "| %s | %d | %s | %.1f ms | %.1f ms | %.3f ms | %.3f / %.3f / %.3f / %.3f ms | %.1f%% | %s | %s | %s | %s |\n",
			name, r.cycles, every, ms(r.markTotal), ms(r.markMax), perReq(r.cpu.total),
			perReq(r.cpu.assist), perReq(r.cpu.dedicated), perReq(r.cpu.idle), perReq(r.cpu.pause),
			100*float64(r.overlapped)/float64(max(r.requests, 1)), f(r.inMark.p50), f(r.inMark.p99), f(r.outOfMark.p50), f(r.outOfMark.p99))
	}
}
