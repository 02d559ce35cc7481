package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// The slow report answers "what did the slow requests that no garbage
// collection touched wait for": for every request above a percentile whose
// window no GC mark phase or stop-the-world overlapped, it splits the
// request's wall time, instant by instant, by the state of its critical
// path — a request-path goroutine running, else one runnable (waiting for
// a P), else one in a system call, else all blocked (on what the goroutine
// that wakes next waited for) — and says what ran on the Ps meanwhile.
//
// With a `perf script` of `perf record -e sched:sched_switch -a -k
// CLOCK_MONOTONIC` taken during the same run, "running" is split further by
// the kernel's view of the goroutine's thread: on a core, or waiting for one
// (Go has the goroutine running on a P, but the OS runs another thread —
// with 4 Ps on 2 cores that is the contention Go's trace cannot show), and
// the threads on the cores meanwhile are named by the goroutine Go ran on
// them (or by their process).

// slowWindow is one selected request and its critical-path accounting.
type slowWindow struct {
	start, end xtrace.Time
	crit       map[string]time.Duration // critical state -> time
	beside     map[string]time.Duration // "<when>: <class>" -> time on a P or core
}

func (w *slowWindow) bounds() (xtrace.Time, xtrace.Time) { return w.start, w.end }

// threadSpan is a goroutine running (or in a syscall) on an OS thread.
type threadSpan struct {
	a, b  xtrace.Time
	class string
	path  bool
}

// cpuSpan is a thread on a core, from the kernel's sched_switch events
// (monotonic ns).
type cpuSpan struct {
	a, b      int64
	tid       int64
	comm      string
	prio      int
	preempted bool // it left the core runnable (prev_state R)
}

// schedTrace is the kernel's view: every core's spans, and each thread's.
type schedTrace struct {
	cpus  map[int][]cpuSpan
	byTid map[int64][]cpuSpan
}

var switchRE = regexp.MustCompile(`\[(\d+)\]\s+(\d+)\.(\d+):\s+sched:sched_switch: prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=(\d+)`)

// readSched parses `perf script --ns` output of sched_switch events.
func readSched(path string) (*schedTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("slow report: %w", err)
	}
	defer f.Close()
	type cur struct {
		since int64
		tid   int64
		comm  string
		prio  int
	}
	st := &schedTrace{cpus: map[int][]cpuSpan{}, byTid: map[int64][]cpuSpan{}}
	open := map[int]*cur{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		m := switchRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		cpu, _ := strconv.Atoi(m[1])
		sec, _ := strconv.ParseInt(m[2], 10, 64)
		frac := m[3]
		for len(frac) < 9 {
			frac += "0"
		}
		ns, _ := strconv.ParseInt(frac[:9], 10, 64)
		t := sec*1e9 + ns
		prev, _ := strconv.ParseInt(m[5], 10, 64)
		prevPrio, _ := strconv.Atoi(m[6])
		next, _ := strconv.ParseInt(m[9], 10, 64)
		nextPrio, _ := strconv.Atoi(m[10])
		if c := open[cpu]; c != nil && c.tid == prev {
			s := cpuSpan{a: c.since, b: t, tid: prev, comm: c.comm, prio: prevPrio, preempted: strings.HasPrefix(m[7], "R")}
			st.cpus[cpu] = append(st.cpus[cpu], s)
			st.byTid[prev] = append(st.byTid[prev], s)
		}
		open[cpu] = &cur{since: t, tid: next, comm: strings.TrimSpace(m[8]), prio: nextPrio}
	}
	return st, sc.Err()
}

// slowReport prints the report for the trace at path (and the sched
// script at schedPath, if set), for requests at or above percentile pct.
func slowReport(out io.Writer, path, schedPath string, pct float64) error {
	reqs, err := requestWindows(path)
	if err != nil {
		return err
	}
	if len(reqs) == 0 {
		return fmt.Errorf("slow report: %s has no \"request\" region (write it with proxybench -trace)", path)
	}
	var sched *schedTrace
	if schedPath != "" {
		if sched, err = readSched(schedPath); err != nil {
			return err
		}
	}
	// First pass: the GC's mark phases and pauses, and the trace clock's
	// offset from CLOCK_MONOTONIC.
	var gcRanges [][2]xtrace.Time
	gcStat := map[string][]time.Duration{}
	open := map[string]xtrace.Time{}
	var monoOff int64
	haveClock := false
	err = readTrace(path, func(e xtrace.Event) {
		switch e.Kind() {
		case xtrace.EventRangeBegin:
			if n := e.Range().Name; n == "GC concurrent mark phase" || strings.HasPrefix(n, "stop-the-world") {
				open[n] = e.Time()
			}
		case xtrace.EventRangeEnd:
			n := e.Range().Name
			if t, ok := open[n]; ok {
				gcRanges = append(gcRanges, [2]xtrace.Time{t, e.Time()})
				delete(open, n)
				k := "mark phase"
				if n != "GC concurrent mark phase" {
					k = "stop-the-world"
				}
				gcStat[k] = append(gcStat[k], e.Time().Sub(t))
			}
		case xtrace.EventSync:
			if c := e.Sync().ClockSnapshot; c != nil && !haveClock {
				monoOff = int64(c.Mono) - int64(c.Trace)
				haveClock = true
			}
		}
	})
	if err != nil {
		return err
	}
	if sched != nil && !haveClock {
		return fmt.Errorf("slow report: %s has no clock snapshot to match the kernel's events with", path)
	}
	durs := make([]time.Duration, len(reqs))
	for i, w := range reqs {
		durs[i] = w.dur()
	}
	slices.Sort(durs)
	cut := durs[min(len(durs)-1, int(float64(len(durs))*pct/100))]
	touchesGC := func(w *window) bool {
		for _, r := range gcRanges {
			if r[0] < w.end && r[1] > w.start {
				return true
			}
		}
		return false
	}
	var slow, mid, all []*slowWindow
	lo, hi := durs[len(durs)*45/100], durs[len(durs)*55/100]
	gcTouched := 0
	for _, w := range reqs {
		d := w.dur()
		if touchesGC(w) {
			if d >= cut {
				gcTouched++
			}
			continue
		}
		sw := &slowWindow{start: w.start, end: w.end, crit: map[string]time.Duration{}, beside: map[string]time.Duration{}}
		all = append(all, sw)
		if d >= cut {
			slow = append(slow, sw)
		} else if d >= lo && d <= hi {
			mid = append(mid, sw)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	if err := fillSlow(path, all, sched, monoOff); err != nil {
		return err
	}
	fmt.Fprintf(out, "slow report: %d requests; p%g %s; %d at or above it, %d of them overlapped by a GC mark phase or pause (left out); %d without: mean ms per request\n\n",
		len(reqs), pct, f(cut), len(slow)+gcTouched, gcTouched, len(slow))
	for _, k := range []string{"mark phase", "stop-the-world"} {
		d := gcStat[k]
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		if len(d) > 0 {
			fmt.Fprintf(out, "GC %s: %d, total %s, median %s, longest %s\n", k, len(d), f(sum), f(d[len(d)/2]), f(d[len(d)-1]))
		}
	}
	fmt.Fprintln(out)
	printSlow(out, "slow, no GC", slow, sched != nil)
	printSlow(out, "median (p45–p55), no GC", mid, sched != nil)
	printSlow(out, "every request no GC touched", all, sched != nil)
	return nil
}

// fillSlow accounts each window's critical path (second pass).
func fillSlow(path string, ws []*slowWindow, sched *schedTrace, monoOff int64) error {
	type gstate struct {
		goroutine
		thread xtrace.ThreadID
		ivs    []slowInterval
	}
	gs := map[xtrace.GoID]*gstate{}
	get := func(id xtrace.GoID) *gstate {
		g := gs[id]
		if g == nil {
			g = &gstate{}
			gs[id] = g
		}
		return g
	}
	err := readTrace(path, func(e xtrace.Event) {
		if id := e.Goroutine(); id != xtrace.NoGoroutine {
			get(id).see(e.Stack())
		}
		if e.Kind() != xtrace.EventStateTransition {
			return
		}
		st := e.StateTransition()
		if st.Resource.Kind != xtrace.ResourceGoroutine {
			return
		}
		g := get(st.Resource.Goroutine())
		g.see(st.Stack)
		if g.state != "" && len(overlapping(ws, g.since, e.Time())) > 0 {
			g.ivs = append(g.ivs, slowInterval{interval{g.since, e.Time(), g.state, g.stack}, g.thread})
		}
		from, to := st.Goroutine()
		if from == xtrace.GoNotExist && e.Goroutine() != xtrace.NoGoroutine {
			for fr := range e.Stack().Frames() {
				g.creator = append(g.creator, fr.Func)
			}
			g.creatorRoot = rootOf(e.Stack())
		}
		g.state, g.since, g.thread = stateName(to, st.Reason), e.Time(), e.Thread()
		g.stack = ""
		if to == xtrace.GoWaiting {
			for fr := range e.Stack().Frames() {
				if strings.Contains(fr.Func, "metaclaw") || strings.Contains(fr.Func, "database/sql") || strings.HasPrefix(fr.Func, "sync.") {
					g.stack += " " + strings.ReplaceAll(fr.Func, "github.com/metaclaw-go/metaclaw/", "")
					if strings.Count(g.stack, " ") >= 3 {
						break
					}
				}
			}
		}
	})
	if err != nil {
		return err
	}
	// Per window: the request path's intervals, and what ran on each
	// thread (for naming the threads the kernel ran instead).
	type piv struct {
		slowInterval
		class string
	}
	paths := map[*slowWindow][]piv{}
	others := map[*slowWindow][]piv{}
	onThread := map[xtrace.ThreadID][]threadSpan{}
	for _, g := range gs {
		class := classify(g.root, g.funcs)
		if class == "other" && len(g.creator) > 0 {
			class = classify(g.creatorRoot, g.creator)
		}
		isPath := slices.Contains(requestPath, class)
		ran := map[*slowWindow]bool{}
		for _, iv := range g.ivs {
			if iv.state == "running" || iv.state == "syscall" {
				onThread[iv.thread] = append(onThread[iv.thread], threadSpan{iv.a, iv.b, class, isPath})
				for _, w := range overlapping(ws, iv.a, iv.b) {
					ran[w] = true
				}
			}
		}
		for _, iv := range g.ivs {
			for _, w := range overlapping(ws, iv.a, iv.b) {
				if isPath && ran[w] {
					paths[w] = append(paths[w], piv{iv, class})
				} else if !isPath && iv.state == "running" {
					others[w] = append(others[w], piv{iv, class})
				}
			}
		}
	}
	for _, s := range onThread {
		sort.Slice(s, func(i, j int) bool { return s[i].a < s[j].a })
	}
	// threadClass names what Go ran on thread tid at trace time t.
	threadClass := func(tid int64, t xtrace.Time) (string, bool) {
		s := onThread[xtrace.ThreadID(tid)]
		i := sort.Search(len(s), func(i int) bool { return s[i].b > t })
		if i < len(s) && s[i].a <= t {
			return s[i].class, true
		}
		return "", false
	}
	toMono := func(t xtrace.Time) int64 { return int64(t) + monoOff }
	// onCPU is how much of [a, b) (trace time) any of tids spent on a core.
	onCPU := func(tids []int64, a, b xtrace.Time) time.Duration {
		ma, mb := toMono(a), toMono(b)
		var spans [][2]int64
		for _, tid := range tids {
			s := sched.byTid[tid]
			i := sort.Search(len(s), func(i int) bool { return s[i].b > ma })
			for ; i < len(s) && s[i].a < mb; i++ {
				spans = append(spans, [2]int64{max(s[i].a, ma), min(s[i].b, mb)})
			}
		}
		return unionLen(spans)
	}
	// cores names what the cores ran during [a, b) (trace time), weighted.
	cores := func(w *slowWindow, label string, a, b xtrace.Time, skip []int64) {
		ma, mb := toMono(a), toMono(b)
		for _, s := range sched.cpus {
			i := sort.Search(len(s), func(i int) bool { return s[i].b > ma })
			for ; i < len(s) && s[i].a < mb; i++ {
				sp := s[i]
				if slices.Contains(skip, sp.tid) {
					continue
				}
				d := time.Duration(min(sp.b, mb) - max(sp.a, ma))
				mid := xtrace.Time((max(sp.a, ma)+min(sp.b, mb))/2 - monoOff)
				name := ""
				switch {
				case sp.tid == 0:
					name = "idle"
				default:
					if c, ok := threadClass(sp.tid, mid); ok {
						name = c
					} else if _, ours := onThread[xtrace.ThreadID(sp.tid)]; ours {
						name = "this process, no goroutine" // the scheduler, spinning or polling
					} else {
						name = "process " + sp.comm
					}
					if sp.prio > 120 {
						name += fmt.Sprintf(" (nice %d)", sp.prio-120)
					}
				}
				w.beside[label+": "+name] += d
			}
		}
	}
	for _, w := range ws {
		ps := paths[w]
		// Elementary segments between the path's state changes.
		var cuts []xtrace.Time
		cuts = append(cuts, w.start, w.end)
		for _, p := range ps {
			if p.a > w.start && p.a < w.end {
				cuts = append(cuts, p.a)
			}
			if p.b > w.start && p.b < w.end {
				cuts = append(cuts, p.b)
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		for k := 0; k+1 < len(cuts); k++ {
			a, b := cuts[k], cuts[k+1]
			var running, syscall []piv
			runnable := false
			var wake *piv
			for i := range ps {
				p := &ps[i]
				if p.a > a || p.b < b {
					continue
				}
				switch {
				case p.state == "running":
					running = append(running, *p)
				case p.state == "syscall":
					syscall = append(syscall, *p)
				case p.state == "runnable":
					runnable = true
				case strings.HasPrefix(p.state, "blocked") && p.b < w.end:
					if wake == nil || p.b < wake.b {
						wake = p
					}
				}
			}
			d := b.Sub(a)
			split := func(label string, on []piv) {
				if sched == nil {
					w.crit[label] += d
					return
				}
				var tids []int64
				for _, p := range on {
					tids = append(tids, int64(p.thread))
				}
				c := onCPU(tids, a, b)
				w.crit[label+", on a core"] += c
				if d > c {
					w.crit[label+", thread off the cores"] += d - c
					cores(w, label+" off the cores", a, b, tids)
				}
			}
			switch {
			case len(running) > 0:
				split("running", running)
			case runnable:
				w.crit["runnable (no P)"] += d
				for _, o := range others[w] {
					if o.a < b && o.b > a {
						w.beside["runnable: on a P: "+o.class] += min(o.b, b).Sub(max(o.a, a))
					}
				}
				if sched != nil {
					cores(w, "runnable", a, b, nil)
				}
			case len(syscall) > 0:
				split("syscall", syscall)
			case wake != nil:
				reason := wake.state
				if strings.Contains(wake.state, "network") {
					reason = "blocked: network (" + wake.class + ")"
				} else if wake.stack != "" {
					reason += " in" + wake.stack
				}
				w.crit[reason] += d
			default:
				w.crit["blocked: until the window's end"] += d
			}
		}
	}
	return nil
}

type slowInterval struct {
	interval
	thread xtrace.ThreadID
}

// unionLen is the total length of the union of spans.
func unionLen(spans [][2]int64) time.Duration {
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var total, end int64
	start := int64(-1)
	for _, s := range spans {
		if start < 0 || s[0] > end {
			if start >= 0 {
				total += end - start
			}
			start, end = s[0], s[1]
		} else {
			end = max(end, s[1])
		}
	}
	if start >= 0 {
		total += end - start
	}
	return time.Duration(total)
}

func printSlow(out io.Writer, label string, ws []*slowWindow, withSched bool) {
	if len(ws) == 0 {
		fmt.Fprintf(out, "%s: none\n\n", label)
		return
	}
	n := time.Duration(len(ws))
	var total time.Duration
	crit := map[string]time.Duration{}
	beside := map[string]time.Duration{}
	for _, w := range ws {
		total += w.end.Sub(w.start)
		for k, v := range w.crit {
			crit[k] += v
		}
		for k, v := range w.beside {
			beside[k] += v
		}
	}
	fmt.Fprintf(out, "%s: %d requests, mean %s\n\n| critical path state | mean per request | share |\n|---|---|---|\n", label, len(ws), f(total/n))
	for _, k := range sortedKeys(crit) {
		fmt.Fprintf(out, "| %s | %s | %.0f%% |\n", k, f(crit[k]/n), 100*float64(crit[k])/float64(total))
	}
	fmt.Fprintf(out, "\n| meanwhile (when: who) | mean per request |\n|---|---|\n")
	for _, k := range sortedKeys(beside) {
		if beside[k]/n < 5*time.Microsecond {
			continue
		}
		fmt.Fprintf(out, "| %s | %s |\n", k, f(beside[k]/n))
	}
	fmt.Fprintln(out)
}

// sortedKeys orders a map's keys by value, largest first.
func sortedKeys(m map[string]time.Duration) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if m[ks[i]] != m[ks[j]] {
			return m[ks[i]] > m[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}
